package worker

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/concurrency"
	"github.com/spyder-crawler/spyder/queue"
)

// maxOverloadRequeues is how many times one host is handed back for
// overload by this process before its timeout is written as its result:
// a host that times out whenever it is visited is slow, whatever the load.
const maxOverloadRequeues = 5

// limit returns Config.Limit, or a fixed one of Config.Concurrency, and
// keeps it for the visits.
func (w *Loop) limit() *concurrency.Limit {
	lim := w.cfg.Limit
	if lim == nil {
		lim = concurrency.Fixed(w.cfg.Concurrency)
	}
	w.lim.Store(lim)
	return lim
}

// overloaded reports whether res, a visit that started at start, timed
// out while this process was saturated: its timeout says more about the
// process than about the host, so it is not the host's result. A host is
// handed back so at most maxOverloadRequeues times; once its result is
// written, its count is forgotten, so the counts held are those of hosts
// handed back and not yet written.
func (w *Loop) overloaded(ctx context.Context, res *spyder.Result, start time.Time) bool {
	handBack := timedOut(res) && w.lim.Load().SaturatedSince(ctx, start)
	w.overMu.Lock()
	defer w.overMu.Unlock()
	if !handBack || w.overload[res.Host] >= maxOverloadRequeues {
		delete(w.overload, res.Host)
		return false
	}
	w.overload[res.Host]++
	return true
}

// handBack returns l to pending without spending an attempt (see
// overloaded), to be visited again.
func (w *Loop) handBack(ctx context.Context, l queue.Lease) {
	w.untrack(l.ID)
	w.lim.Load().NoteOverload()
	w.m.RequeuedOverload.Inc()
	if _, err := w.q.Release(ctx, []queue.Lease{l}); err != nil {
		w.log.Warn("requeue_error", "host", l.Item.Host, "err", err, "note", "the lease expires and the host is reclaimed")
		return
	}
	w.log.Info("requeued_overload", "host", l.Item.Host,
		"note", "timed out while this process was saturated: handed back without spending an attempt")
}

// timedOut reports whether a step of res timed out, or its connect did,
// waiting for something the process's load can delay. A wait the crawler
// refused ahead, because the rate limiter, --max-rate (on HTTP or DNS) or
// the host's crawl-delay would have it end past the deadline ("limiter:
// …", "max rate: …", "query rate: …", "crawl-delay exceeds the host
// deadline"), is not one: the rate and the host set it, not the load.
func timedOut(res *spyder.Result) bool {
	for _, s := range res.Outcome.Steps {
		if rateRefused(s.Detail) {
			continue
		}
		if s.Status == spyder.StatusTimeout || strings.Contains(s.Detail, "timeout") || strings.Contains(s.Detail, "deadline exceeded") {
			return true
		}
	}
	return false
}

// rateRefused reports whether a step's detail says the crawler refused a
// wait the rate or the host's crawl-delay would have ended past the
// deadline.
func rateRefused(detail string) bool {
	return strings.HasPrefix(detail, "limiter:") || strings.HasPrefix(detail, "max rate:") ||
		strings.Contains(detail, "query rate:") || strings.Contains(detail, "exceeds the host deadline")
}

// noteLimit reports the limit after a reading in /metrics and, when it
// moved, counts the move there and logs it (at info when its cause
// changed).
func (w *Loop) noteLimit(s concurrency.State, moved bool) {
	w.m.SetLimit(s.Limit, s.Signals.SchedP99)
	if !moved {
		return
	}
	w.m.NoteLimitMove(s.Why.Cause)
	w.limMu.Lock()
	changed := s.Why.Cause != w.limCause
	w.limCause = s.Why.Cause
	w.limMu.Unlock()
	level := slog.LevelDebug
	if changed {
		level = slog.LevelInfo
	}
	w.log.Log(context.Background(), level, "concurrency_limit", "limit", s.Limit, "cause", s.Why.Cause, "why", s.Why.Detail,
		"in_flight", s.Inflight, "hosts_per_s", int(s.Rate))
}

// Limit reports the concurrency limit and why it is what it is; the zero
// State before Run.
func (w *Loop) Limit() concurrency.State {
	if lim := w.lim.Load(); lim != nil {
		return lim.State()
	}
	return concurrency.State{}
}

// noteOverloadTotal logs, as the run ends, how many visits were handed
// back because they timed out while the process was saturated.
func (w *Loop) noteOverloadTotal(lim *concurrency.Limit) {
	if s := lim.State(); s.Overload > 0 {
		w.log.Info("requeued_overload_total", "count", s.Overload, "limit", s.Limit, "why", s.Why.String(),
			"note", "visits that timed out while this process was saturated, handed back without spending an attempt")
	}
}
