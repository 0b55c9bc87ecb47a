package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

// runProbes runs the cases of the probes' heartbeats ([store.Probes]).
func runProbes(t *testing.T, h Harness) {
	t.Run("LatestBeatOfEachProbeSortedByID", func(t *testing.T) {
		t.Parallel()
		testProbesLatest(t, h.New(t))
	})
	t.Run("ExpiredBeatFades", func(t *testing.T) {
		t.Parallel()
		testProbesFade(t, h.New(t))
	})
	t.Run("AfterCloseReportsErrClosed", func(t *testing.T) {
		t.Parallel()
		b := h.New(t)
		b.Close()
		if err := b.Heartbeat(t.Context(), store.ProbeBeat{ID: "p"}, long); !errors.Is(err, queue.ErrClosed) {
			t.Errorf("Heartbeat after Close = %v, want ErrClosed", err)
		}
		if _, err := b.Probes(t.Context()); !errors.Is(err, queue.ErrClosed) {
			t.Errorf("Probes after Close = %v, want ErrClosed", err)
		}
	})
}

// beat is a heartbeat with every field set, At in whole seconds as JSON
// keeps it comparable.
func beat(id string, done int64) store.ProbeBeat {
	return store.ProbeBeat{ID: id, Rate: 12.5, Done: done, Inflight: 3, At: time.Unix(1705312200+done, 0).UTC()}
}

// testProbesLatest: each probe's last beat replaces its earlier one, and
// every field comes back as sent.
func testProbesLatest(t *testing.T, b store.Backend) {
	ctx := t.Context()
	if got, err := b.Probes(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Probes before any beat = %v, %v; want none", got, err)
	}
	for _, bt := range []store.ProbeBeat{beat("probe-b", 1), beat("probe-a", 2), beat("probe-b", 7)} {
		if err := b.Heartbeat(ctx, bt, long); err != nil {
			t.Fatalf("Heartbeat(%s): %v", bt.ID, err)
		}
	}
	got, err := b.Probes(ctx)
	if err != nil {
		t.Fatalf("Probes: %v", err)
	}
	want := []store.ProbeBeat{beat("probe-a", 2), beat("probe-b", 7)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Probes (-want +got):\n%s", diff)
	}
}

// testProbesFade: a probe that stops beating leaves the list once its
// beat's TTL has passed; the others stay. The short beat lives a second,
// so that the listing right after it sees it even on a loaded machine,
// and the listing is then asked until it is gone.
func testProbesFade(t *testing.T, b store.Backend) {
	ctx := t.Context()
	const short = time.Second
	start := time.Now()
	if err := b.Heartbeat(ctx, beat("short", 1), short); err != nil {
		t.Fatal(err)
	}
	if err := b.Heartbeat(ctx, beat("long", 2), long); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Probes(ctx); err != nil || len(got) != 2 {
		t.Fatalf("Probes at once = %v, %v; want both", got, err)
	}
	var got []store.ProbeBeat
	for deadline := start.Add(short + 10*time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if got, err = b.Probes(ctx); err != nil {
			t.Fatal(err)
		}
		if len(got) < 2 || time.Now().After(deadline) {
			break
		}
	}
	if gone := time.Since(start); gone < short-10*time.Millisecond { // stores keep ms
		t.Errorf("the short beat left the list %v after it was made, before its TTL of %v", gone, short)
	}
	if len(got) != 1 || got[0].ID != "long" {
		t.Errorf("Probes after the short beat expired = %v, want only %q", got, "long")
	}
	// The next beat of another probe also clears the expired record.
	if err := b.Heartbeat(ctx, beat("long", 3), long); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Probes(ctx); len(got) != 1 || got[0].Done != 3 {
		t.Errorf("Probes after the next beat = %v, want only long with done 3", got)
	}
}
