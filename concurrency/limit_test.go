package concurrency

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/concurrency/concurrencytest"
)

// TestLimit_AcquireRelease: slots are taken up to the limit, in batches,
// and a release wakes the waiter.
func TestLimit_AcquireRelease(t *testing.T) {
	l := Fixed(10)
	ctx := t.Context()
	if n, ok := l.Acquire(ctx, 4); n != 4 || !ok {
		t.Fatalf("Acquire(4) = %d, %v; want 4", n, ok)
	}
	if n, _ := l.Acquire(ctx, 100); n != 6 {
		t.Fatalf("Acquire(100) = %d; want the 6 left", n)
	}
	got := make(chan int)
	go func() { n, _ := l.Acquire(ctx, 100); got <- n }()
	select {
	case n := <-got:
		t.Fatalf("Acquire with none free = %d; want it to wait", n)
	case <-time.After(50 * time.Millisecond):
	}
	l.Release(3)
	if n := <-got; n != 3 {
		t.Errorf("Acquire after Release(3) = %d; want 3", n)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, ok := l.Acquire(cctx, 1); ok {
		t.Error("Acquire on a cancelled ctx with none free = ok")
	}
	if s := l.State(); s.Limit != 10 || s.Inflight != 10 || s.Why.Cause != CauseFixed {
		t.Errorf("State() = %+v; want limit 10, 10 in flight, fixed", s)
	}
}

// TestLimit_StarvedProcessShrinksThenGrows starves the process for real (one
// CPU for Go, 64 goroutines spinning on it): the limit is cut with the
// scheduler's latency as its reason, and the process knows it was
// saturated; once the burners stop and the limit is in use, it grows again.
// The CPU hold is off (CPUHigh above 1): the test is of the scheduler's
// latency, and other tests may keep the machine's CPUs busy.
func TestLimit_StarvedProcessShrinksThenGrows(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l := New(Config{Max: 4096, Start: 1024, Interval: 100 * time.Millisecond, CPUHigh: 1.1})
	ctx, cancel := context.WithCancel(t.Context())
	var moves atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, func(_ State, moved bool) {
			if moved {
				moves.Add(1)
			}
		})
	}()
	defer func() { cancel(); <-done }()
	n, _ := l.Acquire(ctx, 1024) // the limit is in use
	start := time.Now()
	stop := make(chan struct{})
	burners := concurrencytest.Burn(64, stop)
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
		}
	}()
	waitFor(t, 30*time.Second, "the limit cut for saturation", func() bool {
		s := l.State()
		return s.Limit < 1024 && s.Why.Cause == CauseSaturated
	})
	if !l.SaturatedSince(ctx, start) {
		t.Error("SaturatedSince(the burn's start) = false while starved")
	}
	close(stop)
	stopped = true
	burners.Wait()
	cut := l.State().Limit
	l.Release(n)
	n, _ = l.Acquire(ctx, cut)
	waitFor(t, 10*time.Second, "the limit grown again", func() bool {
		if s := l.State(); s.Limit > cut && s.Why.Cause == CauseHealthy {
			return true
		}
		if k, ok := tryAcquire(l); ok { // keep the limit in use
			n += k
		}
		for range cut / 2 { // and visits finishing
			l.Done(time.Millisecond)
		}
		return false
	})
	l.Release(n)
	if moves.Load() < 2 {
		t.Errorf("%d moves reported; want the cut and the growth", moves.Load())
	}
}

// tryAcquire takes every free slot without waiting.
func tryAcquire(l *Limit) (int, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	return l.Acquire(ctx, 1<<20)
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestLimit_BusyCPUsHoldTheLimit: with a goroutine spinning on every CPU,
// the limit in use and visits finishing fast, the limit does not grow, and
// says the CPUs are why.
func TestLimit_BusyCPUsHoldTheLimit(t *testing.T) {
	l := New(Config{Max: 4096, Start: 256, Interval: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx, nil) }()
	defer func() { cancel(); <-done }()
	n, _ := l.Acquire(ctx, 256)
	defer l.Release(n)
	stop := make(chan struct{})
	burners := concurrencytest.Burn(runtime.NumCPU(), stop)
	defer func() { close(stop); burners.Wait() }()
	sawCPU := false
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		for range 256 {
			l.Done(time.Millisecond)
		}
		s := l.State()
		if s.Limit > 256 {
			t.Fatalf("the limit grew to %d (%s) with every CPU busy", s.Limit, s.Why)
		}
		sawCPU = sawCPU || s.Why.Cause == CauseCPU
		time.Sleep(50 * time.Millisecond)
	}
	if !sawCPU {
		t.Errorf("the limit never held for the CPUs; last: %s", l.State().Why)
	}
}

// TestLimit_NotSaturatedBelowSchedHigh: while the scheduler's latency stays
// under SchedHigh the process is not saturated, so a visit that timed out
// then is the host's result, written, not handed back.
func TestLimit_NotSaturatedBelowSchedHigh(t *testing.T) {
	l := New(Config{Max: 64, Interval: 20 * time.Millisecond, SchedHigh: 30 * time.Second})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx, nil) }()
	defer func() { cancel(); <-done }()
	start := time.Now()
	time.Sleep(100 * time.Millisecond)
	if l.SaturatedSince(ctx, start) {
		t.Error("SaturatedSince = true with the scheduler's latency under SchedHigh")
	}
}
