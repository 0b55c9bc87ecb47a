package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/store"
)

// RunEmitted runs the cases every [store.Emitted] passes, so that the bbolt,
// Redis and in-memory seen sets behave the same. newEmitted is called once
// per subtest and must return a fresh, empty seen set. [Run] runs them on a
// backend's seen set; call RunEmitted alone for a seen set outside one.
func RunEmitted(t *testing.T, newEmitted func(t *testing.T) store.Emitted) {
	cases := []struct {
		name string
		fn   func(t *testing.T, e store.Emitted)
	}{
		{"NewKeysAreUnseen", testEmittedNewKeysAreUnseen},
		{"MarkedKeysAreSeen", testEmittedMarkedKeysAreSeen},
		{"SeenDoesNotMark", testEmittedSeenDoesNotMark},
		{"MarkTwiceIsHarmless", testEmittedMarkTwiceIsHarmless},
		{"RunsAreSeparate", testEmittedRunsAreSeparate},
		{"KeysAreExact", testEmittedKeysAreExact},
		{"EmptyCallsAreNoops", testEmittedEmptyCallsAreNoops},
		{"LargeBatch", testEmittedLargeBatch},
		{"ConcurrentMarks", testEmittedConcurrentMarks},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newEmitted(t))
		})
	}
}

func testEmittedNewKeysAreUnseen(t *testing.T, e store.Emitted) {
	got := mustSeen(t, e, "run", "a", "b")
	if diff := cmp.Diff([]bool{false, false}, got); diff != "" {
		t.Errorf("Seen on an empty set (-want +got):\n%s", diff)
	}
}

func testEmittedMarkedKeysAreSeen(t *testing.T, e store.Emitted) {
	mustMark(t, e, "run", "a", "c")
	got := mustSeen(t, e, "run", "a", "b", "c", "a")
	if diff := cmp.Diff([]bool{true, false, true, true}, got); diff != "" {
		t.Errorf("Seen after Mark(a, c) (-want +got):\n%s", diff)
	}
}

func testEmittedSeenDoesNotMark(t *testing.T, e store.Emitted) {
	mustSeen(t, e, "run", "a")
	if got := mustSeen(t, e, "run", "a"); got[0] {
		t.Errorf("Seen(a) after only Seen(a) = true, want false")
	}
}

func testEmittedMarkTwiceIsHarmless(t *testing.T, e store.Emitted) {
	mustMark(t, e, "run", "a", "a")
	mustMark(t, e, "run", "a")
	if got := mustSeen(t, e, "run", "a"); !got[0] {
		t.Errorf("Seen(a) after marking it twice = false, want true")
	}
}

func testEmittedRunsAreSeparate(t *testing.T, e store.Emitted) {
	mustMark(t, e, "run1", "a")
	if got := mustSeen(t, e, "run2", "a"); got[0] {
		t.Errorf("Seen(run2, a) after Mark(run1, a) = true, want false")
	}
	if got := mustSeen(t, e, "run1", "a"); !got[0] {
		t.Errorf("Seen(run1, a) after Mark(run1, a) = false, want true")
	}
}

func testEmittedKeysAreExact(t *testing.T, e store.Emitted) {
	long := strings.Repeat("x", 10_000)
	mustMark(t, e, "run", "e\x00LINKS_TO\x00a.com\x00b.com", long, "", "ünï")
	got := mustSeen(t, e, "run", "e\x00LINKS_TO\x00a.com\x00b.co", "e\x00LINKS_TO\x00a.com\x00b.com",
		long, long+"y", "", "ünï", "uni", "E\x00LINKS_TO\x00a.com\x00b.com")
	want := []bool{false, true, true, false, true, true, false, false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Seen (-want +got):\n%s", diff)
	}
}

func testEmittedEmptyCallsAreNoops(t *testing.T, e store.Emitted) {
	if err := e.Mark(t.Context(), "run", nil); err != nil {
		t.Fatalf("Mark(nil) = %v, want nil", err)
	}
	got, err := e.Seen(t.Context(), "run", nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("Seen(nil) = %v, %v, want [], nil", got, err)
	}
}

func testEmittedLargeBatch(t *testing.T, e store.Emitted) {
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
}

func testEmittedConcurrentMarks(t *testing.T, e store.Emitted) {
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if err := e.Mark(t.Context(), "run", []string{fmt.Sprintf("k%d-%d", w, i), "shared"}); err != nil {
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
}

func mustSeen(tb testing.TB, e store.Emitted, run string, keys ...string) []bool {
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

func mustMark(tb testing.TB, e store.Emitted, run string, keys ...string) {
	tb.Helper()
	if err := e.Mark(context.Background(), run, keys); err != nil {
		tb.Fatalf("Mark(%q, %d keys): %v", run, len(keys), err)
	}
}
