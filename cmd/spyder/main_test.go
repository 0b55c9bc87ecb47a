package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

var (
	binDir string
	binErr error
	binMu  sync.Mutex
	binOK  bool
)

func TestMain(m *testing.M) {
	code := redistest.Main(m)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// mustBinary builds cmd/spyder once per test run and returns its path.
func mustBinary(tb testing.TB) string {
	tb.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if !binOK && binErr == nil {
		binDir, binErr = os.MkdirTemp("", "spyder-e2e-")
		if binErr == nil {
			out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "spyder"), ".").CombinedOutput()
			if err != nil {
				binErr = fmt.Errorf("go build: %v\n%s", err, out)
			} else {
				binOK = true
			}
		}
	}
	if binErr != nil {
		tb.Fatalf("build spyder: %v", binErr)
	}
	return filepath.Join(binDir, "spyder")
}

// startProxy serves HTTP CONNECT on loopback through w.Dial, so a spyder
// process (--dial-proxy) reaches the simulated internet exactly as the
// in-process crawl tests do, and nothing else.
func startProxy(tb testing.TB, w *crawltest.World) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("proxy listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	track := func(c net.Conn, on bool) {
		mu.Lock()
		defer mu.Unlock()
		if on {
			conns[c] = true
		} else {
			delete(conns, c)
		}
	}
	tb.Cleanup(func() {
		cancel()
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				track(c, true)
				defer track(c, false)
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil || req.Method != http.MethodConnect {
					return
				}
				up, err := w.Dial(ctx, "tcp", req.Host)
				if err != nil {
					fmt.Fprintf(c, "HTTP/1.1 502 %s\r\n\r\n", strings.ReplaceAll(err.Error(), "\r\n", " "))
					return
				}
				track(up, true)
				defer track(up, false)
				defer up.Close()
				io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
				done := make(chan struct{}, 2)
				go func() { io.Copy(up, br); up.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				go func() { io.Copy(c, up); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				<-done
				<-done
			}()
		}
	}()
	return ln.Addr().String()
}

// proc is one spyder process started by a test.
type proc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
	err    error
}

// startSpyder runs the binary with args, with no SPYDER_ variables from the
// test's environment.
func startSpyder(tb testing.TB, args ...string) *proc {
	tb.Helper()
	return startProc(tb, exec.Command(mustBinary(tb), args...))
}

// startProc starts cmd with the test's environment less its SPYDER_ and
// REDIS_QUEUE_ADDR variables, plus env, and kills it at cleanup if it is
// still running.
func startProc(tb testing.TB, cmd *exec.Cmd, env ...string) *proc {
	tb.Helper()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPYDER_") && !strings.HasPrefix(kv, "REDIS_QUEUE_ADDR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	if cmd.Dir == "" && (cmd.SysProcAttr == nil || cmd.SysProcAttr.Credential == nil) {
		cmd.Dir = testDir(tb) // where a fleet probe's default --state-dir goes
	}
	p := &proc{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = &lockedBuffer{b: p.stderr}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", cmd.Path, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	tb.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the process to exit (failing the test after d).
func (p *proc) wait(tb testing.TB, d time.Duration) error {
	tb.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		p.cmd.Process.Kill()
		<-p.done
		tb.Fatalf("spyder %v did not exit within %v; stderr:\n%s", p.cmd.Args[1:], d, p.log())
		return nil
	}
}

func (p *proc) log() string {
	if lb, ok := p.cmd.Stderr.(*lockedBuffer); ok {
		return lb.String()
	}
	return p.stderr.String()
}

type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// worldArgs are the flags that point spyder at the simulated internet.
func worldArgs(tb testing.TB, w *crawltest.World) []string {
	return []string{"--resolver", w.Resolver, "--dial-proxy", startProxy(tb, w), "--host-timeout", "20s", "--log-level", "debug"}
}

// onBothBackends runs test as parallel subtests "bbolt" and "redis", each
// given the flags of its backend: a fresh bbolt file, or a fresh queue in
// the test Redis with --exit-when-empty.
func onBothBackends(t *testing.T, test func(t *testing.T, backend []string)) {
	t.Run("bbolt", func(t *testing.T) {
		t.Parallel()
		test(t, []string{"--db", filepath.Join(t.TempDir(), "spyder.db")})
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		test(t, []string{"--redis", redistest.Addr(t), "--queue-key", redistest.Prefix(t), "--exit-when-empty"})
	})
}

// mustDomains writes hosts to a file, one per line.
func mustDomains(tb testing.TB, hosts []string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "domains.txt")
	if err := os.WriteFile(p, []byte(strings.Join(hosts, "\n")+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// output is what spyder wrote, read back from batch lines.
type output struct {
	Domains []spyder.DomainNode
	IPs     []spyder.IPNode
	Certs   []spyder.CertNode
	Edges   []spyder.Edge
	Probes  []spyder.HostOutcome
	Lines   int
}

// mustReadBatches reads batch-format output files (a missing one is empty).
func mustReadBatches(tb testing.TB, paths ...string) output {
	tb.Helper()
	var out output
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			tb.Fatal(err)
		}
		out.add(tb, data, p)
	}
	return out
}

func (out *output) add(tb testing.TB, data []byte, name string) {
	tb.Helper()
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var b spyder.Batch
		if err := json.Unmarshal(line, &b); err != nil {
			tb.Fatalf("%s line %d: %v: %.200s", name, i+1, err, line)
		}
		out.Lines++
		out.Domains = append(out.Domains, b.NodesDomain...)
		out.IPs = append(out.IPs, b.NodesIP...)
		out.Certs = append(out.Certs, b.NodesCert...)
		out.Edges = append(out.Edges, b.Edges...)
		out.Probes = append(out.Probes, b.Outcomes...)
	}
}

// edgeSet returns the distinct (type, source, target) of edges, sorted, and
// how many edges repeated one already seen.
func edgeSet(edges []spyder.Edge) ([]spyder.Edge, int) {
	seen := map[spyder.Edge]bool{}
	var out []spyder.Edge
	dups := 0
	for _, e := range edges {
		k := spyder.Edge{Type: e.Type, Source: e.Source, Target: e.Target}
		if seen[k] {
			dups++
			continue
		}
		seen[k] = true
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b spyder.Edge) int {
		return strings.Compare(a.Type+"\x00"+a.Source+"\x00"+a.Target, b.Type+"\x00"+b.Source+"\x00"+b.Target)
	})
	return out, dups
}

// checkEdges fails unless edges hold exactly the world's expected edges.
func checkEdges(tb testing.TB, w *crawltest.World, edges []spyder.Edge) {
	tb.Helper()
	got, _ := edgeSet(edges)
	want, _ := edgeSet(w.Expected)
	if diff := cmp.Diff(want, got); diff != "" {
		lines := strings.Split(diff, "\n")
		if len(lines) > 60 {
			lines = append(lines[:60], fmt.Sprintf("... %d more lines", len(lines)-60))
		}
		tb.Errorf("edges differ from World.Expected (-want +got), %d want, %d got:\n%s", len(want), len(got), strings.Join(lines, "\n"))
	}
}

// checkEverySeedWritten fails for each seed of w with no outcome in out.
func checkEverySeedWritten(tb testing.TB, w *crawltest.World, out output) {
	tb.Helper()
	counts := probeCounts(out.Probes)
	for _, h := range w.Seeds {
		if counts[h] == 0 {
			tb.Errorf("host %s never written", h)
		}
	}
}

// probeCounts counts how many times each host's outcome was written.
func probeCounts(ps []spyder.HostOutcome) map[string]int {
	n := map[string]int{}
	for _, p := range ps {
		n[string(p.Host)]++
	}
	return n
}

// checkWrittenOnce fails tb for each of hosts whose outcome is not among
// probes exactly once; where says where they were written (" over the
// fleet"), for the message.
func checkWrittenOnce(tb testing.TB, hosts []string, probes []spyder.HostOutcome, where string) {
	tb.Helper()
	counts := probeCounts(probes)
	for _, h := range hosts {
		if counts[h] != 1 {
			tb.Errorf("host %s written %d times%s, want 1", h, counts[h], where)
		}
	}
}

// logLines returns the JSON log lines of stderr whose msg is msg.
func logLines(stderr, msg string) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(stderr, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// testDirs holds each test's working directory for the processes it
// starts (see testDir).
var testDirs sync.Map

// testDir is the working directory of every process a test starts: one
// temporary directory per test, so that fleet probes' default state
// directories stay out of the source tree and a probe the test restarts
// finds what the one before it kept, as it would on a machine.
func testDir(tb testing.TB) string {
	if d, ok := testDirs.Load(tb); ok {
		return d.(string)
	}
	d := tb.TempDir()
	testDirs.Store(tb, d)
	return d
}
