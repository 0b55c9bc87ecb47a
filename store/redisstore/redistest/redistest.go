// Package redistest starts real redis-server processes on free loopback ports
// for tests. Nothing here is a fake: tests talk to the same server binary a
// fleet runs against.
//
// Tests get the package-wide server with [Addr] (give every test its own key
// prefix with [Prefix] instead of flushing), or a dedicated one with [Start]
// when they stop and restart it. Set SPYDER_TEST_REDIS_ADDR to use a running
// server instead of the shared one. Without a redis-server binary tests are
// skipped, unless CI or SPYDER_REQUIRE_REDIS is set, when they fail.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Server is one redis-server process on a loopback port.
type Server struct {
	Addr string
	dir  string
	args []string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

var (
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
	prefixSeq  atomic.Int64
)

// Main runs a package's tests and then stops the shared server and the
// shared cluster, if they were started. Call it from TestMain: os.Exit(redistest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Stop()
		os.RemoveAll(shared.dir)
	}
	if sharedCluster != nil {
		sharedCluster.Stop()
	}
	return code
}

// Addr returns the address of the package's shared redis-server, starting it
// on first use.
func Addr(tb testing.TB) string {
	tb.Helper()
	if a := os.Getenv("SPYDER_TEST_REDIS_ADDR"); a != "" {
		return a
	}
	requireTool(tb, "redis-server", "Redis")
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "redistest-")
		if err != nil {
			sharedErr = err
			return
		}
		shared = &Server{dir: dir}
		sharedErr = shared.start()
	})
	if sharedErr != nil {
		tb.Fatalf("redistest: start shared redis-server: %v", sharedErr)
	}
	return shared.Addr
}

// Prefix returns a key prefix unique to this test, so tests sharing a server
// never see each other's keys.
func Prefix(tb testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(tb.Name())
	return fmt.Sprintf("t%d:%s:%d", os.Getpid(), name, prefixSeq.Add(1))
}

// Start starts a dedicated redis-server for one test, without persistence
// (unless extra args say otherwise), stopped at the test's end.
func Start(tb testing.TB, extraArgs ...string) *Server {
	tb.Helper()
	requireTool(tb, "redis-server", "Redis")
	s := &Server{dir: tb.TempDir(), args: extraArgs}
	if err := s.start(); err != nil {
		tb.Fatalf("redistest: start redis-server: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Stop kills the server (SIGKILL: as a crash, nothing saved).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart starts the server again on the same address. Unless it was started
// with persistence, it comes back empty.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		tb.Fatalf("redistest: restart redis-server: %v", err)
	}
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	port := "0"
	if s.Addr != "" {
		_, port, _ = net.SplitHostPort(s.Addr)
	}
	var lastErr error
	for try := 0; try < 5; try++ {
		p := port
		if p == "0" {
			fp, err := freePort()
			if err != nil {
				return err
			}
			p = fp
		}
		args := append([]string{
			"--port", p, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", s.dir, "--protected-mode", "no", "--loglevel", "warning",
		}, s.args...)
		cmd := exec.Command("redis-server", args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		logf, err := os.Create(filepath.Join(s.dir, "redis-"+p+".log"))
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			logf.Close()
			return err
		}
		logf.Close()
		addr := net.JoinHostPort("127.0.0.1", p)
		if err := waitReady(addr, 10*time.Second); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			lastErr = fmt.Errorf("redis-server on %s: %w", addr, err)
			if port != "0" {
				time.Sleep(200 * time.Millisecond) // old socket may linger
			}
			continue
		}
		s.Addr, s.cmd = addr, cmd
		return nil
	}
	return lastErr
}

// waitReady waits until the server answers PING.
func waitReady(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte("PING\r\n"))
			line, rerr := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if rerr == nil && strings.HasPrefix(line, "+PONG") {
				return nil
			}
			err = fmt.Errorf("answered %q %v", line, rerr)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return p, nil
}

// requireTool skips the test (for a Redis or Redis Cluster test, what)
// when name is not in PATH, or fails it where Redis is required (CI or
// SPYDER_REQUIRE_REDIS is set).
func requireTool(tb testing.TB, name, what string) {
	tb.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	if os.Getenv("CI") != "" || os.Getenv("SPYDER_REQUIRE_REDIS") != "" {
		tb.Fatalf("redistest: %s not found in PATH (required: CI or SPYDER_REQUIRE_REDIS is set; `make test` installs it)", name)
	}
	tb.Skipf("redistest: %s not found in PATH; install it (make test does) to run %s tests", name, what)
}
