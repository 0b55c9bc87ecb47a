package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestQueueDropRun: `queue drop-run RUN` forgets that run's output seen set
// and no other, on both backends; a run with none (dropped already, or
// mistyped) is said to have none; without a run it is a usage error.
func TestQueueDropRun(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "spyder.db")
		open := func() (store.Backend, error) { return boltstore.Open(db, boltstore.Options{}) }
		testDropRun(t, open, "--db", db)
	})
	t.Run("redis", func(t *testing.T) {
		addr, key := redistest.Addr(t), redistest.Prefix(t)
		open := func() (store.Backend, error) {
			return redisstore.Connect(context.Background(), addr, redisstore.Options{Key: key})
		}
		testDropRun(t, open, "--redis", addr, "--queue-key", key)
	})
}

func testDropRun(t *testing.T, open func() (store.Backend, error), backend ...string) {
	ctx := context.Background()
	emitted := func(fn func(e store.Emitted)) {
		t.Helper()
		b, err := open()
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		e, err := b.Emitted()
		if err != nil {
			t.Fatal(err)
		}
		fn(e)
	}
	emitted(func(e store.Emitted) {
		for _, run := range []string{"old", "new"} {
			if err := e.Mark(ctx, run, []string{"i\x00192.0.2.1", "d\x00a.com"}); err != nil {
				t.Fatal(err)
			}
		}
	})
	out := runApp(t, append(append([]string{"queue", "drop-run"}, backend...), "old")...)
	if !strings.Contains(out, "dropped run old: 2 keys") {
		t.Errorf("queue drop-run said %q, want it to count the 2 keys", out)
	}
	out = runApp(t, append(append([]string{"queue", "drop-run"}, backend...), "old")...)
	if !strings.Contains(out, "run old has no output seen set in ") || !strings.HasSuffix(out, ": nothing dropped\n") {
		t.Errorf("queue drop-run of a run dropped already said %q, want it to say nothing was dropped", out)
	}
	emitted(func(e store.Emitted) {
		for run, want := range map[string]bool{"old": false, "new": true} {
			seen, err := e.Seen(ctx, run, []string{"i\x00192.0.2.1"})
			if err != nil || seen[0] != want {
				t.Errorf("Seen(%s) after dropping old = %v, %v; want %v", run, seen, err, want)
			}
		}
	})
	if _, errOut, err := tryApp(ctx, append([]string{"queue", "drop-run"}, backend...)...); err == nil || !strings.Contains(errOut+err.Error(), "name one run") {
		t.Errorf("queue drop-run without a run = %v (%s), want a usage error", err, errOut)
	}
}
