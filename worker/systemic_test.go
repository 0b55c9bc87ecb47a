package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/sink"
)

// TestLoop_GuardWritesFailuresOfHosts crawls a world whose hosts fail in
// every way, one host at a time (so every connect error is held alone,
// with nothing else in flight to vouch for the network): the resolver
// check passes each time and every host's result is written, the failed
// ones included.
func TestLoop_GuardWritesFailuresOfHosts(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s, err := sink.NewJSONSink(&buf, sink.FormatBatch)
	if err != nil {
		t.Fatal(err)
	}
	f := newLoopFixture(t, crawltest.Options{Hosts: 300, Seed: 44}, 200, &lockedSink{s: s}, 5*time.Second)
	f.l.cfg.Concurrency = 1
	f.run(t, t.Context())
	f.batcher.Close(context.Background())
	written, suspects := 0, 0
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var b spyder.Batch
		if err := json.Unmarshal(line, &b); err != nil {
			t.Fatal(err)
		}
		for _, p := range b.Outcomes {
			written++
			if suspect(&spyder.Result{Outcome: p}) != "" {
				suspects++
			}
		}
	}
	if written != 200 {
		t.Errorf("%d hosts written, want 200\n%s", written, f.logs)
	}
	if suspects == 0 {
		t.Errorf("no host failed as the network could: the guard was not exercised\n%s", buf.String())
	}
	if st := f.stats(t); st.Pending != 0 || st.Processing != 0 || st.Dead != 0 {
		t.Errorf("queue after the run: %+v, want empty", st)
	}
}

// TestGuard_HaltsWhenTheCheckFails: probes held while the check fails are
// not written, the halt names the check's error, and later ones are not
// held at all.
func TestGuard_HaltsWhenTheCheckFails(t *testing.T) {
	t.Parallel()
	var halted atomic.Value
	checkErr := errors.New("resolver 192.0.2.53:53 does not answer")
	g := newGuard(func(context.Context, host.Name) error { return checkErr },
		func() int { return 3 }, func(err error) { halted.Store(err) })
	results := make(chan bool, 3)
	for range 3 {
		go func() { results <- g.hold(t.Context(), "dns timeout", "") }()
	}
	for range 3 {
		select {
		case write := <-results:
			if write {
				t.Errorf("hold = true after a failed check, want false")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("hold did not return after the check")
		}
	}
	err, _ := halted.Load().(error)
	if err == nil || !strings.Contains(err.Error(), checkErr.Error()) || !strings.Contains(err.Error(), "dns timeout: 3") {
		t.Errorf("halt error = %v, want one naming the check's error and the 3 dns timeouts", err)
	}
	if g.hold(t.Context(), "dns timeout", "") {
		t.Errorf("hold after the halt = true, want false")
	}
}

// TestGuard_SuccessReleasesHeld: a probe that succeeds while others are
// held has them written, without a check.
func TestGuard_SuccessReleasesHeld(t *testing.T) {
	t.Parallel()
	var checks atomic.Int32
	g := newGuard(func(context.Context, host.Name) error { checks.Add(1); return errors.New("down") },
		func() int { return 10 }, func(error) { t.Error("halted") })
	done := make(chan bool, 1)
	go func() { done <- g.hold(t.Context(), "tls connect_error", "") }()
	waitHeld(t, g, 1)
	g.ok("a.com")
	select {
	case write := <-done:
		if !write {
			t.Errorf("hold = false after a success, want true")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hold did not return after a success")
	}
	if n := checks.Load(); n != 0 {
		t.Errorf("%d checks ran, want 0", n)
	}
}

// TestGuard_SuccessDuringCheckWins: a probe that succeeds while a check
// runs proves the network works, so the held probes are written even if
// the check then fails, and the run does not halt.
func TestGuard_SuccessDuringCheckWins(t *testing.T) {
	t.Parallel()
	checking, release := make(chan struct{}), make(chan struct{})
	g := newGuard(func(context.Context, host.Name) error {
		close(checking)
		<-release
		return errors.New("resolver 192.0.2.53:53 does not answer")
	}, func() int { return 1 }, func(err error) { t.Errorf("halted: %v", err) })
	done := make(chan bool, 1)
	go func() { done <- g.hold(t.Context(), "dns timeout", "") }()
	<-checking
	g.ok("a.com")
	close(release)
	select {
	case write := <-done:
		if !write {
			t.Errorf("hold = false after a success during the check, want true")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hold did not return after the check")
	}
}

// waitHeld waits until g holds n probes.
func waitHeld(t *testing.T, g *guard, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		held := g.held
		g.mu.Unlock()
		if held == n {
			return
		}
	}
	t.Fatalf("the guard never held %d probes", n)
}

// TestGuard_HaltsWhenNoConnectionCanBeMade: holdLimit probes in a row that
// all failed to connect halt the run even though the resolver answers (the
// way out is blocked), while as many mixed failures, or fewer connect
// errors, are written.
func TestGuard_HaltsWhenNoConnectionCanBeMade(t *testing.T) {
	t.Parallel()
	answers := func(context.Context, host.Name) error { return nil }
	holdAll := func(g *guard, signs []string) []bool {
		results := make(chan bool, len(signs))
		for _, sign := range signs {
			go func() { results <- g.hold(t.Context(), sign, "") }()
		}
		var got []bool
		for range signs {
			select {
			case w := <-results:
				got = append(got, w)
			case <-time.After(10 * time.Second):
				t.Fatal("hold did not return after the check")
			}
		}
		return got
	}
	repeat := func(sign string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = sign
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		signs    []string
		inflight int
		halt     bool
	}{
		{"AllConnectErrors", repeat("page connect_error", holdLimit), 1 << 20, true},
		{"MixedFailures", append(repeat("page connect_error", holdLimit-1), "dns timeout"), 1 << 20, false},
		{"FewConnectErrors", repeat("page connect_error", 5), 5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var halted atomic.Value
			g := newGuard(answers, func() int { return tc.inflight }, func(err error) { halted.Store(err) })
			for _, w := range holdAll(g, tc.signs) {
				if w == tc.halt {
					t.Fatalf("hold = %v, want %v", w, !tc.halt)
				}
			}
			err, _ := halted.Load().(error)
			if tc.halt != (err != nil) {
				t.Fatalf("halted with %v, want a halt: %v", err, tc.halt)
			}
			if tc.halt && !strings.Contains(err.Error(), fmt.Sprintf("connect_error: %d", holdLimit)) {
				t.Errorf("halt %q does not count the connect errors", err)
			}
		})
	}
}
