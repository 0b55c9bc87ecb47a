package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spyder-crawler/spyder/concurrency"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

// Run works until done and returns after handing back what it did not
// finish. Cancelling ctx is the shutdown signal: leasing stops, in-flight
// probes get the grace period to finish, and the rest is released. A store
// that refuses writes ends the run with that error (see haltError).
func (w *Loop) Run(ctx context.Context) error {
	bg := context.WithoutCancel(ctx)
	ctx, w.halt = context.WithCancelCause(ctx)
	defer w.halt(nil)
	if w.cfg.Check != nil {
		w.guard = newGuard(w.cfg.Check, w.Inflight, func(err error) { w.halt(haltError{err}) })
	}
	workCtx, cancelWork := context.WithCancel(bg)
	defer cancelWork()
	if w.cfg.Held != nil {
		// What an earlier run held goes first: it was written before
		// anything this run will write.
		w.spool.replayHeld(ctx)
		replayCtx, stopReplay := context.WithCancel(bg)
		replayDone := make(chan struct{})
		go func() { defer close(replayDone); w.spool.replayLoop(replayCtx) }()
		defer func() { stopReplay(); <-replayDone; w.spool.replayLast(bg) }()
	}

	// Beside the work: reclaiming expired leases, and checking that the
	// queue kept its state.
	sideCtx, stopSide := context.WithCancel(ctx)
	var side sync.WaitGroup
	side.Go(func() { w.reclaim.run(sideCtx) })
	side.Go(func() { w.watch.run(sideCtx) })
	defer func() { stopSide(); side.Wait() }()

	lim := w.limit()
	limCtx, stopLim := context.WithCancel(bg) // read until the last visit ends
	var limDone sync.WaitGroup
	limDone.Go(func() { lim.Run(limCtx, w.noteLimit) })
	defer func() { stopLim(); limDone.Wait() }()

	var wg sync.WaitGroup
	acks := make(chan finished, lim.Max())
	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		w.acker.run(workCtx, acks, lim)
	}()
	err := w.leaseLoop(ctx, lim, func(leases []queue.Lease) { w.start(workCtx, leases, lim, acks, &wg) })
	if herr := w.windDown(ctx, cancelWork); herr != nil {
		err = herr
	} else if ctx.Err() != nil {
		t := time.AfterFunc(w.cfg.Grace, func() {
			w.log.Warn("grace_expired", "in_flight", w.Inflight())
			cancelWork()
		})
		defer t.Stop()
	}
	wg.Wait()
	close(acks)
	<-ackDone
	w.noteOverloadTotal(lim)
	if rerr := w.releaseRest(bg, ctx.Err() != nil); err == nil {
		err = rerr
	}
	return err
}

// haltError is the cause the loop's context is cancelled with when the run
// must stop on an error (a signal cancels it with another).
type haltError struct{ error }

// windDown says why leasing stopped. A halted run cancels the work at once
// (what is in flight would fail the same way) and returns the halt's
// error; a signalled one logs the shutdown and returns nil, leaving the
// work its grace period.
func (w *Loop) windDown(ctx context.Context, cancelWork func()) error {
	var h haltError
	switch {
	case errors.As(context.Cause(ctx), &h):
		w.log.Error("halt", "in_flight", w.Inflight(), "err", h.error)
		cancelWork()
		return h.error
	case ctx.Err() != nil:
		w.log.Info("shutdown", "in_flight", w.Inflight(), "grace", w.cfg.Grace.String())
	}
	return nil
}

// leaseLoop leases while there is room and work, handing what it leased
// to start. A slot of lim is taken per lease and freed once the lease is
// acked (by the acker), failed, handed back or left for releaseRest.
func (w *Loop) leaseLoop(ctx context.Context, lim *concurrency.Limit, start func([]queue.Lease)) error {
	for {
		n, ok := lim.Acquire(ctx, maxLeaseBatch)
		if !ok {
			return nil
		}
		leases, err := w.q.Lease(ctx, n, w.cfg.LeaseTTL, leaseWait)
		lim.Release(n - len(leases))
		w.link.noteErr(ctx, err)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, queue.ErrClosed) {
				return errOrNil(ctx, err)
			}
			if writesRefused(err) { // a read-only replica, a Redis that cannot persist
				w.halt(haltError{err})
				return nil
			}
			w.log.Warn("lease_error", "err", err, "retry_in", leaseRetry.String())
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(leaseRetry):
			}
			continue
		}
		if len(leases) == 0 {
			if done, err := w.finished(ctx); done {
				return err
			}
			continue
		}
		start(leases)
	}
}

// errOrNil is nil when ctx ended (a shutdown, not an error), else err.
func errOrNil(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// start tracks leases and probes each in a goroutine of its own, under
// ctx (the work's); a probe that does not hand its lease to acks frees
// its slot itself.
func (w *Loop) start(ctx context.Context, leases []queue.Lease, lim *concurrency.Limit, acks chan<- finished, wg *sync.WaitGroup) {
	w.m.Leased.Add(float64(len(leases)))
	w.track(leases)
	for _, l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !w.work(ctx, &l, acks) {
				lim.Release(1)
			}
		}()
	}
}

// finished reports whether an empty lease means the run is over: with
// ExitWhenEmpty, nothing this loop holds and nothing pending or in flight
// anywhere. An empty queue that forgot hosts is not a finished crawl: it
// ends the run with an error saying so instead of exiting 0.
func (w *Loop) finished(ctx context.Context) (bool, error) {
	if !w.cfg.ExitWhenEmpty || w.Inflight() != 0 || w.spool.isHolding() {
		return false, nil
	}
	st, err := w.q.Stats(ctx)
	if err != nil || st.Pending != 0 || st.Processing != 0 {
		return false, nil
	}
	if most := w.seenMax.Load(); st.Seen < most {
		return true, fmt.Errorf("the queue is empty but lost its state: it has seen %d hosts, %d earlier (Redis restarted without its data?); "+
			"restore the last `spyder queue export` snapshot with `spyder queue import` and start again", st.Seen, most)
	}
	return true, nil
}

// writesRefused reports whether err says the store of the output will take
// no write until someone acts (see [store.ErrWritesRefused]).
func writesRefused(err error) bool {
	return errors.Is(err, store.ErrWritesRefused)
}
