package worker

import (
	"context"
	"errors"
	"time"

	"github.com/spyder-crawler/spyder/concurrency"
	"github.com/spyder-crawler/spyder/queue"
)

// finished is a host whose result is durable, with the probe to keep for
// it, waiting for its ack.
type finished struct {
	l queue.Lease
	p queue.Visit
}

// acker is the service that acks the hosts whose results are durable: in
// batches, through the spool when there is one, trying again while the
// queue cannot be reached. Its one context is the work's: its end stops
// the retries, not the calls under way, which run on a context without
// its cancellation so that an ack is never cut in half.
type acker struct {
	*env
	link    *link
	spool   *spool
	untrack func(id string) // the loop's: the lease is no longer in flight
}

// run acks the leases workers hand over, as many per AckAll call as
// are waiting: the queue sees one round trip for them, and no worker waits
// on its own. Each lease's slot of lim is freed once its ack is answered,
// so at most the limit's hosts are ever leased and not yet acked. It
// returns once acks is closed and drained.
func (a *acker) run(ctx context.Context, acks <-chan finished, lim *concurrency.Limit) {
	for f := range acks {
		batch := []finished{f}
	more:
		for len(batch) < maxAckBatch {
			select {
			case f, ok := <-acks:
				if !ok {
					break more
				}
				batch = append(batch, f)
			default:
				break more
			}
		}
		a.ackAll(ctx, batch)
		lim.Release(len(batch))
	}
}

// ackAll keeps the probes of fs and acks their leases, reporting each
// outcome, trying again while the queue
// cannot be reached (a Redis restarting, a network cut) until the last of
// the leases would expire or ctx (the work's context) ends: an ack given up
// on leaves the host to be probed again once its lease expires, though its
// result is written.
func (a *acker) ackAll(ctx context.Context, fs []finished) {
	ls := make([]queue.Lease, len(fs))
	ps := make([]queue.Visit, len(fs))
	for i, f := range fs {
		ls[i], ps[i] = f.l, f.p
	}
	var ok []bool
	var err error
	if a.cfg.Held != nil {
		var held bool
		if ok, held, err = a.ackOrHold(ctx, fs, ls, ps); held {
			for _, l := range ls {
				a.untrack(l.ID)
			}
			return
		}
	} else {
		ok, err = a.ackRetrying(ctx, ls, ps)
	}
	for i, l := range ls {
		a.untrack(l.ID)
		switch {
		case err != nil:
			a.log.Error("ack_error", "host", l.Item.Host, "err", err)
		case !ok[i]:
			a.m.LeaseLost.Inc()
			a.log.Warn("lease_lost", "host", l.Item.Host, "lease", l.ID,
				"note", "the lease expired and was reclaimed; the host is probed again (its output is deduplicated)")
		default:
			a.done.Add(1)
			a.m.Acked.Inc()
		}
	}
}

// ackRetrying calls AckAll with ls and their probes ps (one call keeps
// both, so an acked host always has its record) until it answers, backing
// off from 100 ms to 5 s, for as long as the last lease of ls holds and ctx
// lasts; it logs ack_retry once.
func (a *acker) ackRetrying(ctx context.Context, ls []queue.Lease, ps []queue.Visit) ([]bool, error) {
	bg := context.WithoutCancel(ctx)
	last := ls[0].Deadline
	for _, l := range ls[1:] {
		if l.Deadline.After(last) {
			last = l.Deadline
		}
	}
	for try, wait := 0, 100*time.Millisecond; ; try, wait = try+1, min(2*wait, 5*time.Second) {
		ok, err := a.q.AckAll(bg, ls, ps)
		a.link.noteErr(bg, err)
		if err == nil || errors.Is(err, queue.ErrClosed) || time.Until(last) < wait {
			return ok, err
		}
		if try == 0 {
			a.log.Warn("ack_retry", "count", len(ls), "hosts", hostList(ls), "err", err, "until", last.Format(time.RFC3339))
		}
		select {
		case <-ctx.Done():
			return ok, err
		case <-time.After(wait):
		}
	}
}

// ackOrHold acks fs through the held writes: behind those already held,
// or held itself when the queue does not take it. held reports that fs
// went to Config.Held, to be acked when it is replayed; otherwise ok and
// err are AckAll's, as ackRetrying returns them.
func (a *acker) ackOrHold(ctx context.Context, fs []finished, ls []queue.Lease, ps []queue.Visit) (ok []bool, held bool, err error) {
	bg := context.WithoutCancel(ctx)
	e := heldEntry{Acks: make([]heldAck, len(fs))}
	for i, f := range fs {
		e.Acks[i] = heldAck{f.l, f.p}
	}
	if held, herr := a.spool.holdBehind(bg, e); held && herr == nil {
		return nil, true, nil
	}
	ok, err = a.q.AckAll(bg, ls, ps)
	a.link.noteErr(bg, err)
	if err == nil || errors.Is(err, queue.ErrClosed) {
		return ok, false, err
	}
	if herr := a.spool.hold(bg, e); herr != nil {
		a.log.Error("held_error", "err", herr)
		ok, err = a.ackRetrying(ctx, ls, ps)
		return ok, false, err
	}
	return nil, true, nil
}
