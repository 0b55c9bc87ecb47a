package interop

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RequireTools skips tb when a program the world runs is missing, or fails
// it when SPYDER_REQUIRE_TOOLS or CI is set (`make deps` installs them).
// It also needs root: the servers listen on ports 53 and 443.
func RequireTools(tb testing.TB, progs ...string) {
	tb.Helper()
	// Debian installs the servers in /usr/sbin, which a user's PATH may
	// leave out.
	if path := os.Getenv("PATH"); !strings.Contains(path, "/usr/sbin") {
		os.Setenv("PATH", path+":/usr/sbin:/sbin")
	}
	var missing []string
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	why := ""
	switch {
	case len(missing) > 0:
		why = "missing " + strings.Join(missing, ", ") + " (make deps installs them)"
	case os.Geteuid() != 0:
		why = "not root: the servers listen on ports 53 and 443 of loopback addresses"
	default:
		return
	}
	if os.Getenv("SPYDER_REQUIRE_TOOLS") != "" || os.Getenv("CI") != "" {
		tb.Fatalf("interop: %s", why)
	}
	tb.Skipf("interop: %s", why)
}

// Start runs prog with args as a process group of its own, its output
// going to dir/name.log, and kills the group when tb ends. It waits until
// every address in ready ("ip:port", TCP) accepts connections, and fails
// tb with the end of the log if the process exits or 15 s pass first.
func Start(tb testing.TB, dir, name string, ready []string, prog string, args ...string) {
	tb.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(prog, args...)
	cmd.Dir = dir
	// Servers that keep files under the user's home (Caddy) keep them here.
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("interop: start %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	tb.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	if err := waitReady(ready, exited); err != nil {
		log, _ := os.ReadFile(logPath)
		tb.Fatalf("interop: %s: %v\n%s", name, err, tail(string(log), 2000))
	}
}

// waitReady polls each address until it accepts a TCP connection.
func waitReady(addrs []string, exited <-chan struct{}) error {
	deadline := time.Now().Add(15 * time.Second)
	for _, a := range addrs {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				return fmt.Errorf("exited before %s accepted connections", a)
			default:
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not accepting connections: %v", a, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// writeFile writes data to dir/name (0644, parents made) and returns the
// path, failing tb on error.
func writeFile(tb testing.TB, dir, name string, data []byte) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// AddLoopback gives the loopback interface the address ip (/32, or /128
// for IPv6) until tb ends, for servers that listen only on addresses an
// interface holds (BIND; every server on IPv6): the rest of 127.0.0.0/8 is
// reachable, but no interface holds it, and IPv6 loopback is ::1 alone.
func AddLoopback(tb testing.TB, ip string) {
	tb.Helper()
	// An address left by a test that was killed is taken over.
	prefix := ip + "/32"
	if strings.Contains(ip, ":") {
		prefix = ip + "/128"
	}
	out, err := exec.Command("ip", "addr", "add", prefix, "dev", "lo").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "File exists") {
		tb.Fatalf("interop: ip addr add %s: %v: %s", ip, err, out)
	}
	tb.Cleanup(func() { exec.Command("ip", "addr", "del", prefix, "dev", "lo").Run() })
}
