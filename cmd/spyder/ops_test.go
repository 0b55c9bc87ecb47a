package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mustManyDomains writes n host names to a file.
func mustManyDomains(tb testing.TB, n int) string {
	tb.Helper()
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = "h" + strconv.Itoa(i) + ".example.com"
	}
	return mustDomains(tb, hosts)
}

// TestBinary_BadStartWritesNothing runs the real binary with 500 hosts to
// seed and one input that cannot work: each stops with one line naming it,
// exit status 1, before a host is seeded, and leaves no new .db file.
func TestBinary_BadStartWritesNothing(t *testing.T) {
	t.Parallel()
	domains := mustManyDomains(t, 500)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	silent := ln.Addr().String()
	ln.Close()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })

	tests := []struct {
		name string
		args func(dir string) []string
		want string
		code int // exit status
	}{
		{"OutInMissingDir", func(dir string) []string {
			return []string{"--db", filepath.Join(dir, "spyder.db"), "--out", filepath.Join(dir, "nope", "graph.jsonl")}
		}, "directory " + "DIR/nope does not exist", 1},
		{"OutIsDirectory", func(dir string) []string {
			return []string{"--db", filepath.Join(dir, "spyder.db"), "--out", dir}
		}, "is a directory", 1},
		{"DBInMissingDir", func(dir string) []string {
			return []string{"--db", filepath.Join(dir, "nope", "spyder.db")}
		}, "--db DIR/nope/spyder.db: directory DIR/nope does not exist", 1},
		{"RedisSilent", func(dir string) []string {
			return []string{"--redis", silent, "--out", filepath.Join(dir, "graph.jsonl")}
		}, "redis " + silent + " does not answer", 1},
		{"MetricsAddrBusy", func(dir string) []string {
			return []string{"--db", filepath.Join(dir, "spyder.db"), "--metrics-addr", busy.Addr().String()}
		}, "--metrics-addr " + busy.Addr().String(), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := append([]string{"run", "--fake-probe", "--domains", domains}, tt.args(dir)...)
			p := startSpyder(t, args...)
			err := p.wait(t, 30*time.Second)
			checkOneLineFailure(t, p, err, tt.code, strings.ReplaceAll(tt.want, "DIR", dir))
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
				t.Errorf("a failed start left %v behind", left)
			}
		})
	}
}

// checkOneLineFailure checks that the process exited with code and one
// line `spyder: …` holding want on stderr, after no seeding.
func checkOneLineFailure(tb testing.TB, p *proc, err error, code int, want string) {
	tb.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != code {
		tb.Fatalf("exit = %v, want status %d; stderr:\n%s", err, code, p.log())
	}
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(p.log()), "\n") {
		if strings.HasPrefix(line, "spyder: ") {
			msgs = append(msgs, line)
		}
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], want) {
		tb.Errorf("error lines %q, want one containing %q; stderr:\n%s", msgs, want, p.log())
	}
	if n := len(logLines(p.log(), "seeded")); n > 0 {
		tb.Errorf("the run seeded before it failed; stderr:\n%s", p.log())
	}
}

// TestBinary_DBDirNotWritable runs spyder as a user who cannot write the
// --db file's directory (as nobody when the test runs as root, whom no
// mode bit stops).
func TestBinary_DBDirNotWritable(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "spyder-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755); os.RemoveAll(dir) })
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	domains := filepath.Join(dir, "domains.txt")
	if err := os.WriteFile(domains, []byte("a.example.com\nb.example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := mustBinary(t)
	cmd := exec.Command(bin, "run", "--fake-probe", "--domains", domains, "--db", filepath.Join(ro, "spyder.db"))
	if os.Getuid() == 0 {
		// nobody must reach the binary and the files: open the directories.
		for _, d := range []string{dir, filepath.Dir(bin)} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	p := startProc(t, cmd)
	err = p.wait(t, 30*time.Second)
	checkOneLineFailure(t, p, err, 1, "--db "+filepath.Join(ro, "spyder.db")+": directory "+ro+" is not writable")
	if left, _ := os.ReadDir(ro); len(left) > 0 {
		t.Errorf("a failed start left %v in %s", left, ro)
	}
}
