package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// work probes one leased host, writes its result and hands the lease to
// acks, reporting true; the acker then acks it and frees its slot. A probe
// that the shutdown cut short leaves its lease tracked, for releaseRest.
//
// A probe spends most of its life parked on the network with work's frame
// under it, and the collector shrinks a parked goroutine's stack only when
// little of it is in use: so work holds only what the probe needs, and
// what follows the probe is conclude's, called once it returns.
func (w *Loop) work(ctx context.Context, l *queue.Lease, acks chan<- finished) bool {
	w.m.Inflight.Inc()
	defer w.m.Inflight.Dec()
	hb := w.beat(ctx, l)
	start := time.Now()
	res := w.visitor.Visit(ctx, l.Item.Host)
	w.lim.Load().Done(time.Since(start))
	return w.conclude(ctx, hb, res, start, acks)
}

// beating is a lease kept alive by heartbeat until end is called. Most
// probes end long before the first beat is due (a third of the lease TTL),
// so the heartbeat's goroutine is started by a timer at that beat, not
// with the probe: a probe in flight holds a timer, not a parked goroutine
// and its ticker.
type beating struct {
	lease queue.Lease      // as leased: the lease when no beat came
	timer *time.Timer      // runs the heartbeat at the first beat
	quit  chan struct{}    // closed by end
	done  chan queue.Lease // the lease as last extended, once the heartbeat ran
}

// beat schedules heartbeat on a copy of l for its first beat.
func (w *Loop) beat(ctx context.Context, l *queue.Lease) *beating {
	b := &beating{lease: *l, quit: make(chan struct{}), done: make(chan queue.Lease, 1)}
	b.timer = time.AfterFunc(w.beatEvery(), func() { b.done <- w.heartbeat(ctx, b.quit, b.lease) })
	return b
}

// end stops the heartbeat and returns the lease as last extended.
func (b *beating) end() queue.Lease {
	if b.timer.Stop() { // the first beat never came
		return b.lease
	}
	close(b.quit)
	return <-b.done
}

// conclude finishes the work on a probe's result res: it is handed back when
// the shutdown cut it short or the network failed, else written (with the
// hosts it discovered queued first) and its lease handed to acks. The
// heartbeat runs until the result is written. ctx is the work's: its end
// cuts the probe short, not the writes of a finished one, which run on a
// context without its cancellation.
func (w *Loop) conclude(ctx context.Context, hb *beating, res *spyder.Result, start time.Time, acks chan<- finished) bool {
	bg := context.WithoutCancel(ctx)
	if ctx.Err() != nil { // cut short by the shutdown: released, not written
		hb.end()
		return false
	}
	if !w.judge(ctx, hb.lease.Item.Host, res) { // the network failed, not the host: handed back
		hb.end()
		return false
	}
	if w.overloaded(ctx, res, start) { // the process was saturated, not the host slow
		w.handBack(bg, hb.end())
		return false
	}
	var err error
	if w.cfg.Continuous && len(res.Discovered) > 0 {
		// Before the ack, or hosts found but not queued would be lost; and
		// before the write, so the output sees them queued and leaves
		// their nodes to their own probes.
		if err = w.enqueue(bg, res.Discovered); err != nil {
			err = fmt.Errorf("enqueue discovered hosts: %w", err)
		}
	}
	if err == nil {
		// A finished probe is written even when the grace period ends
		// meanwhile: its batch is due within the batcher's delay, and
		// releasing it now could write it twice.
		if err = w.write(ctx, res); err != nil {
			err = fmt.Errorf("output: %w", err)
		}
	}
	l := hb.end()
	switch {
	case err != nil && writesRefused(err):
		// Not the host's fault, and every other host would fail alike:
		// stop the run rather than fail each host to dead. The lease
		// stays tracked and is released. The batch may have reached an
		// output before another refused it (--out, then an --ingest
		// spool on the same full disk), so the host's next probe may
		// write it again: write_refused names it.
		w.log.Warn("write_refused", "host", l.Item.Host, "err", err,
			"note", "the run stops; the host is handed back and probed again (its output may already be written)")
		w.halt(haltError{err})
		return false
	case err != nil:
		w.fail(bg, l, err.Error())
		return false
	}
	outcome := res.Outcome.Summary()
	if queue.CheckOutcome(outcome) != nil {
		outcome = "error"
	}
	acks <- finished{l, queue.Visit{Host: l.Item.Host, At: time.Now().Unix(), Outcome: outcome}}
	return true
}

// judge reports whether res is the host's result to write: true unless
// the guard holds it as a failure of the crawl's own network and then
// halts the run (or the run ends while it is held).
func (w *Loop) judge(ctx context.Context, h host.Name, res *spyder.Result) bool {
	if w.guard == nil {
		return true
	}
	if sign := suspect(res); sign != "" {
		var resolved host.Name
		if answered(res) {
			resolved = h
		}
		return w.guard.hold(ctx, sign, resolved)
	}
	w.guard.ok(h)
	return true
}

// heartbeat extends l at once (it runs at the first beat), then every
// third of the lease TTL and at once when an outage ends, until ctx ends
// or quit closes, and returns the lease as last extended.
//
// The end of an outage it waits for is taken before each Extend: when
// that call fails and the queue answers again before the heartbeat waits
// (while it logs the failure), the outage's end has already closed the
// channel and the lease is renewed at once, not at the next tick, long
// after other probes may have reclaimed it.
func (w *Loop) heartbeat(ctx context.Context, quit <-chan struct{}, l queue.Lease) queue.Lease {
	bg := context.WithoutCancel(ctx) // an Extend under way is not cut short
	t := time.NewTicker(w.beatEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return l
		case <-quit:
			return l
		default:
		}
		back := w.link.comeback()
		nl, err := w.q.Extend(bg, l, w.cfg.LeaseTTL)
		w.link.noteErr(bg, err)
		switch {
		case errors.Is(err, queue.ErrLeaseLost):
			w.log.Warn("lease_lost", "host", l.Item.Host, "lease", l.ID, "during", "heartbeat")
			return l
		case err != nil:
			w.log.Warn("extend_error", "host", l.Item.Host, "err", err)
		default:
			l = nl
		}
		select {
		case <-ctx.Done():
			return l
		case <-quit:
			return l
		case <-t.C:
		case <-back: // renew at once after an outage
		}
	}
}

// beatEvery is the time between two heartbeats: a third of the lease TTL,
// so that two may fail before the lease runs out.
func (w *Loop) beatEvery() time.Duration {
	return max(w.cfg.LeaseTTL/3, 10*time.Millisecond)
}

// fail hands a host whose result could not be written back to the queue;
// ctx is one without cancellation.
func (w *Loop) fail(ctx context.Context, l queue.Lease, reason string) {
	w.untrack(l.ID)
	w.m.Failed.Inc()
	err := w.q.Fail(ctx, l, reason, w.cfg.MaxAttempts)
	switch {
	case errors.Is(err, queue.ErrLeaseLost):
		w.log.Warn("lease_lost", "host", l.Item.Host, "during", "fail")
	case err != nil:
		w.log.Error("fail_error", "host", l.Item.Host, "err", err)
	case l.Item.Attempt+1 >= w.cfg.MaxAttempts:
		w.m.Dead.Inc()
		w.log.Error("item_dead", "host", l.Item.Host, "attempts", l.Item.Attempt+1, "reason", reason)
	default:
		w.log.Warn("host_failed", "host", l.Item.Host, "attempt", l.Item.Attempt+1, "reason", reason)
	}
}

// enqueue seeds the hosts a probe discovered, within MaxDomains. Calls are
// serialised so that workers together stay within the bound (in a fleet
// each probe keeps it on its own view of the seen count). On error the
// host is not acked: it is failed and probed again, or the run stops. ctx
// is one without cancellation.
func (w *Loop) enqueue(ctx context.Context, hosts []host.Name) error {
	w.enqMu.Lock()
	defer w.enqMu.Unlock()
	room := w.cfg.MaxDomains - w.seen.Load()
	if room <= 0 {
		return nil
	}
	if int64(len(hosts)) > room {
		hosts = hosts[:room]
	}
	e := heldEntry{Seed: hosts}
	if held, err := w.spool.holdBehind(ctx, e); held {
		return err
	}
	res, err := w.q.Seed(ctx, hosts)
	w.link.noteErr(ctx, err)
	if err != nil && w.cfg.Held != nil && !writesRefused(err) {
		// Kept on this probe's disk, the hosts are as safe as in the
		// queue: the host that found them can be acked.
		return w.spool.hold(ctx, e)
	}
	if err != nil {
		return err
	}
	w.seen.Add(int64(res.Added))
	w.m.Discovered.Add(float64(res.Added))
	return nil
}

// write hands res to the output. A write that failed because the queue,
// where the output's seen sets live, cannot be reached is tried again
// once it answers, the lease kept alive meanwhile: an outage delays the
// host, it does not fail it. ctx (the work's) ending stops the wait. The
// failed try may have reached the output before its seen-set mark failed,
// so the host may be written twice: write_retry names it.
func (w *Loop) write(ctx context.Context, res *spyder.Result) error {
	bg := context.WithoutCancel(ctx) // a write under way is not cut short
	for {
		err := w.out.Add(bg, res)
		if err == nil || !w.link.waitQueue(ctx, err) {
			return err
		}
		w.log.Warn("write_retry", "host", res.Host, "err", err,
			"note", "the queue answers again; the host's output is written again (it may already have been)")
	}
}
