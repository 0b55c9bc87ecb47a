//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openTTY opens a pseudo-terminal and returns its terminal side, for a
// command's stdin that is a terminal as a person's is. The test is skipped
// where the machine has no /dev/ptmx.
func openTTY(t *testing.T) *os.File {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	rc, err := ptm.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		if ioErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioErr == nil {
			n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	})
	if err = errors.Join(err, ioErr); err != nil {
		t.Fatalf("pseudo-terminal: %v", err)
	}
	pts, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	return pts
}

// runWithStdin runs the spyder binary with stdin and returns its stderr
// and exit status.
func runWithStdin(t *testing.T, stdin *os.File, args ...string) (string, int) {
	t.Helper()
	var stderr strings.Builder
	cmd := exec.Command(mustBinary(t), args...)
	cmd.Stdin, cmd.Stderr = stdin, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stderr.String(), 0
	case errors.As(err, &exit):
		return stderr.String(), exit.ExitCode()
	}
	t.Fatalf("spyder %v: %v", args, err)
	return "", 0
}

// A command that reads stdin when given no file asks for one in a line
// naming the command, exit 2, when stdin is a terminal; when it is another
// character device such as /dev/null it reads it, and finds nothing. The
// /dev/null half runs even where no pseudo-terminal can be opened. A seed
// that found no hosts leaves no new queue file behind.
func TestApp_StdinTerminalOrNot(t *testing.T) {
	db := t.TempDir() + "/q.db"
	tests := []struct {
		args          []string
		atTTY, atNull string
	}{
		{[]string{"graph", "summary"}, "spyder: graph summary: name spyder output files, or pipe one in\n",
			"spyder: graph: no valid line of spyder output (batch, edges, lines or hosts) in stdin\n"},
		{[]string{"graph", "view"}, "spyder: graph view: name spyder output files, or pipe one in\n",
			"spyder: graph: no valid line of spyder output (batch, edges, lines or hosts) in stdin\n"},
		{[]string{"queue", "seed", "--db", db}, "spyder: queue seed: name a file of hosts, or pipe them in: spyder queue seed list.txt\n",
			"spyder: domains on stdin holds no hosts (blank lines and # comments only)\n"},
	}
	t.Run("DevNull", func(t *testing.T) {
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		for _, tt := range tests {
			stderr, code := runWithStdin(t, null, tt.args...)
			if code != 1 || !strings.HasSuffix(stderr, tt.atNull) {
				t.Errorf("spyder %v < /dev/null: exit %d, stderr %q; want 1 and %q", tt.args, code, stderr, tt.atNull)
			}
		}
		// The seed that found no hosts stored nothing, so it leaves no
		// queue file behind.
		if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after a seed that found no hosts, %s: %v; want it not to exist", db, err)
		}
	})
	t.Run("Terminal", func(t *testing.T) {
		tty := openTTY(t)
		for _, tt := range tests {
			stderr, code := runWithStdin(t, tty, tt.args...)
			if code != 2 || !strings.HasSuffix(stderr, tt.atTTY) {
				t.Errorf("spyder %v at a terminal: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.atTTY)
			}
		}
	})
}
