package worker

import (
	"context"
	"time"

	"github.com/spyder-crawler/spyder/queue"
)

// reclaimer is the service that returns expired leases (of crashed
// workers) to pending, or to dead on their last attempt.
type reclaimer struct {
	*env
	link *link
}

// run reclaims now and then every Config.ReclaimEvery until ctx ends.
func (r *reclaimer) run(ctx context.Context) {
	t := time.NewTicker(r.cfg.ReclaimEvery)
	defer t.Stop()
	for {
		if r.settle(ctx) {
			res, err := r.q.Reclaim(ctx, r.cfg.LeaseTTL, r.cfg.MaxAttempts)
			r.link.noteErr(ctx, err)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				r.log.Warn("reclaim_error", "err", err)
			default:
				r.noteReclaimed(res)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// settle waits, after the queue came back from an outage (noticed here
// or elsewhere in the loop), until ReclaimHoldoff has passed, so that live
// probes renew the leases that expired during the outage before anyone
// reclaims them. It reports false, not to reclaim now, while the queue is
// known to be down: a Reclaim tried then might reach it the moment it
// comes back, with no holdoff.
func (r *reclaimer) settle(ctx context.Context) bool {
	if r.link.isDown() && !r.link.reachable(ctx) {
		return false
	}
	if d := r.link.holdoff(); d > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	return ctx.Err() == nil
}

// noteReclaimed logs and counts what one Reclaim moved.
func (r *reclaimer) noteReclaimed(res queue.ReclaimResult) {
	if n := len(res.Requeued) + len(res.Dead); n > 0 {
		r.m.Reclaimed.Add(float64(n))
		r.log.Info("lease_reclaimed", "count", n, "requeued", len(res.Requeued), "hosts", clipHosts(res.Requeued))
	}
	for _, h := range res.Dead {
		r.m.Dead.Inc()
		r.log.Error("item_dead", "host", h, "reason", "lease expired on its last attempt")
	}
}

// stateWatch is the service that checks that the queue kept its state
// every StateEvery (one Stats call, a few cheap reads), so that a loss is
// logged and /healthz turns within seconds.
type stateWatch struct {
	*env
	link *link
}

// run checks now and then every Config.StateEvery (DefaultStateEvery when
// 0) until ctx ends.
func (s *stateWatch) run(ctx context.Context) {
	every := s.cfg.StateEvery
	if every <= 0 {
		every = DefaultStateEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var seen int64
	for {
		seen = s.checkState(ctx, seen)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkState logs queue_state_lost when the queue's seen set is smaller than
// when last checked (seen): spyder never removes a seen host, so the backend
// lost its data, e.g. Redis restarted without persistence. The probe keeps
// going on what is left; the line tells the operator to restore a
// snapshot, and [Loop.StateLost] reports true from then on. It returns the
// size now (seen when the queue does not answer).
func (s *stateWatch) checkState(ctx context.Context, seen int64) int64 {
	st, err := s.q.Stats(ctx)
	s.link.noteErr(ctx, err)
	if err != nil {
		return seen
	}
	if st.Seen > s.seenMax.Load() { // only this watch stores it
		s.seenMax.Store(st.Seen)
	}
	if st.Seen < seen {
		s.lost.Store(true)
		s.log.Error("queue_state_lost", "seen_before", seen, "seen_now", st.Seen, "pending", st.Pending, "processing", st.Processing,
			"note", "the queue forgot hosts it had seen: Redis lost its data (restarted without persistence?); "+
				"restore the last `spyder queue export` snapshot with `spyder queue import` (docs/guarantees.md: When Redis loses its data)")
	}
	return st.Seen
}

// releaseRest hands every lease still held back to pending in one step.
// ctx is one without cancellation: the release is the run's last word.
func (w *Loop) releaseRest(ctx context.Context, signalled bool) error {
	w.mu.Lock()
	rest := make([]queue.Lease, 0, len(w.inflight))
	for _, l := range w.inflight {
		rest = append(rest, l)
	}
	w.inflight = map[string]queue.Lease{}
	w.mu.Unlock()
	if len(rest) == 0 {
		if signalled {
			w.log.Info("shutdown_cleanup", "returned", 0, "hosts", []string{})
		}
		return nil
	}
	n, err := w.q.Release(ctx, rest)
	w.log.Info("shutdown_cleanup", "returned", n, "hosts", hostList(rest), "not_held", len(rest)-n)
	return err
}
