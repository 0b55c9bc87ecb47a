package dashboard_test

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/dashboard"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/store/boltstore"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// board returns a dashboard over a real bbolt queue holding two pending
// hosts and one dead one.
func board(t *testing.T, dir string) *dashboard.Board {
	t.Helper()
	q, err := boltstore.Open(filepath.Join(dir, "spyder.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	ctx := t.Context()
	if _, err := q.Seed(ctx, []host.Name{"a.com", "b.com", "c.com"}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Lease(ctx, 1, time.Minute, 0)
	if err != nil || len(ls) != 1 {
		t.Fatalf("Lease = %v, %v", ls, err)
	}
	if err := q.Fail(ctx, ls[0], "boom", 1); err != nil {
		t.Fatal(err)
	}
	return dashboard.New(q, "spyder.db", false, time.Now(), func() dashboard.Process { return dashboard.Process{} })
}

// TestSocket_AnswersThenDisappears: a client reaches the queue through the
// socket (status, dead list, retry), and stop removes the socket, after
// which Dial reports nobody there.
func TestSocket_AnswersThenDisappears(t *testing.T) {
	dir := t.TempDir()
	path := dashboard.SocketPath(filepath.Join(dir, "spyder.db"))
	stop, err := dashboard.ServeSocket(path, board(t, dir).Handler(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := dashboard.DialSocket(path)
	if !ok {
		t.Fatal("Dial found nobody on a served socket")
	}
	st, err := c.Status(t.Context())
	if err != nil || st.Stats.Pending != 2 || st.Stats.Dead != 1 {
		t.Fatalf("Status = %+v, %v; want 2 pending, 1 dead", st.Stats, err)
	}
	dead, err := c.Dead(t.Context(), 0)
	if err != nil || len(dead) != 1 || dead[0].Host != "a.com" || dead[0].Error != "boom" {
		t.Fatalf("Dead = %+v, %v; want a.com: boom", dead, err)
	}
	if n, err := c.RetryDead(t.Context(), 0); err != nil || n != 1 {
		t.Fatalf("RetryDead = %d, %v; want 1", n, err)
	}
	if st, _ := c.Status(t.Context()); st.Stats.Pending != 3 || st.Stats.Dead != 0 {
		t.Errorf("after retry: %+v, want 3 pending", st.Stats)
	}
	stop()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("socket still there after stop: %v", err)
	}
	if _, ok := dashboard.DialSocket(path); ok {
		t.Error("Dial found somebody after stop")
	}
}

// TestSocket_StaleIsReplaced: the socket file of a process that died
// (nothing listens on it) blocks neither a client, which reports nobody
// there, nor the next run, which replaces it. A socket somebody answers
// on is not taken over.
func TestSocket_StaleIsReplaced(t *testing.T) {
	dir := t.TempDir()
	path := dashboard.SocketPath(filepath.Join(dir, "spyder.db"))
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // as a kill -9 leaves it: the file, and nobody listening
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}
	if _, ok := dashboard.DialSocket(path); ok {
		t.Fatal("Dial took a stale socket for a running crawl")
	}
	b := board(t, dir)
	stop, err := dashboard.ServeSocket(path, b.Handler(), quiet)
	if err != nil {
		t.Fatalf("Serve over a stale socket: %v", err)
	}
	defer stop()
	if _, ok := dashboard.DialSocket(path); !ok {
		t.Fatal("Dial found nobody after Serve replaced the stale socket")
	}
	if _, err := dashboard.ServeSocket(path, b.Handler(), quiet); err == nil || !strings.Contains(err.Error(), "another process answers") {
		t.Errorf("second Serve on a live socket = %v, want it refused", err)
	}
}
