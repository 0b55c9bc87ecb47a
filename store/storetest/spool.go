package storetest

import (
	"context"
	"testing"

	"github.com/spyder-crawler/spyder/store"
)

// runSpool runs the cases every [store.Spool] passes.
func runSpool(t *testing.T, h Harness) {
	t.Run("FIFOByteForByteAcrossReopen", func(t *testing.T) {
		t.Parallel()
		testSpoolFIFO(t, h)
	})
	t.Run("EmptyPeekAndLen", func(t *testing.T) {
		t.Parallel()
		sp := mustSpool(t, h.New(t))
		if id, data, err := sp.Peek(t.Context()); err != nil || id != "" || data != nil {
			t.Errorf("Peek on an empty spool = %q, %q, %v; want \"\", nil, nil", id, data, err)
		}
		if n, err := sp.Len(t.Context()); err != nil || n != 0 {
			t.Errorf("Len on an empty spool = %d, %v; want 0, nil", n, err)
		}
	})
}

// testSpoolFIFO: entries Put through one handle come back through the next
// oldest first, byte for byte (binary and newlines included); Peek leaves
// an entry in place until Remove, and removing it twice is no error.
func testSpoolFIFO(t *testing.T, h Harness) {
	ctx := t.Context()
	b := h.New(t)
	want := [][]byte{[]byte(`{"batch":1}`), {0, 0xff, '\n', 0}, []byte(`{"batch":3}`)}
	sp := mustSpool(t, b)
	for _, d := range want {
		if err := sp.Put(ctx, d); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	wantLen(t, sp, 3)
	sp = mustSpool(t, h.Reopen(t, b))
	for i, w := range want {
		id, got, err := sp.Peek(ctx)
		if err != nil || id == "" {
			t.Fatalf("Peek #%d = %q, %v, want an entry", i, id, err)
		}
		if string(got) != string(w) {
			t.Fatalf("Peek #%d data = %q, want %q", i, got, w)
		}
		if _, again, _ := sp.Peek(ctx); string(again) != string(w) {
			t.Fatalf("second Peek #%d = %q, want the same entry %q", i, again, w)
		}
		for try := range 2 {
			if err := sp.Remove(ctx, id); err != nil {
				t.Fatalf("Remove(%s) #%d: %v", id, try+1, err)
			}
		}
		wantLen(t, sp, len(want)-i-1)
	}
	if id, _, err := sp.Peek(ctx); err != nil || id != "" {
		t.Fatalf("Peek on the emptied spool = %q, %v, want \"\", nil", id, err)
	}
}

// testEmittedReopen: what one handle marked, the next one to open the same
// store sees, as a resumed crawl needs.
func testEmittedReopen(t *testing.T, h Harness) {
	b := h.New(t)
	mustMark(t, mustEmitted(t, b), "run", "a")
	e := mustEmitted(t, h.Reopen(t, b))
	if got := mustSeen(t, e, "run", "a", "b"); !got[0] || got[1] {
		t.Errorf("Seen(a, b) after reopen = %v, want [true false]", got)
	}
}

func wantLen(tb testing.TB, sp store.Spool, want int) {
	tb.Helper()
	if n, err := sp.Len(context.Background()); err != nil || n != want {
		tb.Fatalf("Len() = %d, %v, want %d", n, err, want)
	}
}

func mustSpool(tb testing.TB, b store.Backend) store.Spool {
	tb.Helper()
	sp, err := b.Spool()
	if err != nil {
		tb.Fatalf("Spool(): %v", err)
	}
	return sp
}

func mustEmitted(tb testing.TB, b store.Backend) store.Emitted {
	tb.Helper()
	e, err := b.Emitted()
	if err != nil {
		tb.Fatalf("Emitted(): %v", err)
	}
	return e
}
