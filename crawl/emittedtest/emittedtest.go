// Package emittedtest is the conformance suite every [crawl.Emitted]
// implementation runs, so the bbolt, Redis and in-memory seen sets behave
// the same.
package emittedtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"spyder/crawl"
)

// Run runs the suite. newEmitted is called once per subtest and must return
// a fresh, empty seen set.
func Run(t *testing.T, newEmitted func(t *testing.T) crawl.Emitted) {
	ctx := context.Background()

	t.Run("NewKeysAreUnseen", func(t *testing.T) {
		t.Parallel()
		e := newEmitted(t)
		got := mustSeen(t, e, "run", "a", "b")
		if diff := cmp.Diff([]bool{false, false}, got); diff != "" {
			t.Errorf("Seen on an empty set (-want +got):\n%s", diff)
		}
	})

	t.Run("MarkedKeysAreSeen", func(t *testing.T) {
		t.Parallel()
		e := newEmitted(t)
		mustMark(t, e, "run", "a", "c")
		got := mustSeen(t, e, "run", "a", "b", "c", "a")
		if diff := cmp.Diff([]bool{true, false, true, true}, got); diff != "" {
			t.Errorf("Seen after Mark(a, c) (-want +got):\n%s", diff)
		}
	})

	t.Run("SeenDoesNotMark", func(t *testing.T) {
		t.Parallel()
		e := newEmitted(t)
		mustSeen(t, e, "run", "a")
		if got := mustSeen(t, e, "run", "a"); got[0] {
			t.Errorf("Seen(a) after only Seen(a) = true, want false")
		}
	})

	t.Run("MarkTwiceIsHarmless", func(t *testing.T) {
		t.Parallel()
		e := newEmitted(t)
		mustMark(t, e, "run", "a", "a")
		mustMark(t, e, "run", "a")
		if got := mustSeen(t, e, "run", "a"); !got[0] {
			t.Errorf("Seen(a) after marking it twice = false, want true")
		}
	})

	t.Run("RunsAreSeparate", func(t *testing.T) {
		t.Parallel()
		e := newEmitted(t)
		mustMark(t, e, "run1", "a")
		if got := mustSeen(t, e, "run2", "a"); got[0] {
			t.Errorf("Seen(run2, a) after Mark(run1, a) = true, want false")
		}
		if got := mustSeen(t, e, "run1", "a"); !got[0] {
			t.Errorf("Seen(run1, a) after Mark(run1, a) = false, want true")
		}
	})

	t.Run("KeysAreExact", func(t *testing.T) {
		t.Parallel()
		e := newEmitted(t)
		long := strings.Repeat("x", 10_000)
		mustMark(t, e, "run", "e\x00LINKS_TO\x00a.com\x00b.com", long, "", "ünï")
		got := mustSeen(t, e, "run", "e\x00LINKS_TO\x00a.com\x00b.co", "e\x00LINKS_TO\x00a.com\x00b.com",
			long, long+"y", "", "ünï", "uni", "E\x00LINKS_TO\x00a.com\x00b.com")
		want := []bool{false, true, true, false, true, true, false, false}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Seen (-want +got):\n%s", diff)
		}
	})

	t.Run("EmptyCallsAreNoops", func(t *testing.T) {
		t.Parallel()
		e := newEmitted(t)
		if err := e.Mark(ctx, "run", nil); err != nil {
			t.Fatalf("Mark(nil) = %v, want nil", err)
		}
		got, err := e.Seen(ctx, "run", nil)
		if err != nil || len(got) != 0 {
			t.Fatalf("Seen(nil) = %v, %v, want [], nil", got, err)
		}
	})

	t.Run("LargeBatch", func(t *testing.T) {
		t.Parallel()
		e := newEmitted(t)
		var keys, odd []string
		for i := range 20_000 {
			keys = append(keys, fmt.Sprintf("e\x00RESOLVES_TO\x00host%d.example\x00192.0.2.%d", i, i%256))
			if i%2 == 1 {
				odd = append(odd, keys[i])
			}
		}
		mustMark(t, e, "run", odd...)
		got := mustSeen(t, e, "run", keys...)
		for i, s := range got {
			if s != (i%2 == 1) {
				t.Fatalf("Seen(key %d) = %v, want %v", i, s, i%2 == 1)
			}
		}
	})

	t.Run("ConcurrentMarks", func(t *testing.T) {
		t.Parallel()
		e := newEmitted(t)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					if err := e.Mark(ctx, "run", []string{fmt.Sprintf("k%d-%d", w, i), "shared"}); err != nil {
						t.Errorf("Mark: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		var keys []string
		for w := range 8 {
			for i := range 50 {
				keys = append(keys, fmt.Sprintf("k%d-%d", w, i))
			}
		}
		for i, s := range mustSeen(t, e, "run", append(keys, "shared")...) {
			if !s {
				t.Fatalf("Seen(key %d) after concurrent marks = false, want true", i)
			}
		}
	})
}

func mustSeen(tb testing.TB, e crawl.Emitted, run string, keys ...string) []bool {
	tb.Helper()
	got, err := e.Seen(context.Background(), run, keys)
	if err != nil {
		tb.Fatalf("Seen(%q, %d keys): %v", run, len(keys), err)
	}
	if len(got) != len(keys) {
		tb.Fatalf("Seen(%q, %d keys) returned %d answers", run, len(keys), len(got))
	}
	return got
}

func mustMark(tb testing.TB, e crawl.Emitted, run string, keys ...string) {
	tb.Helper()
	if err := e.Mark(context.Background(), run, keys); err != nil {
		tb.Fatalf("Mark(%q, %d keys): %v", run, len(keys), err)
	}
}
