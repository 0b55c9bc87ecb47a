package worker

import (
	"context"
	"errors"
	"time"

	"github.com/spyder-crawler/spyder/queue"
)

// finished is a host whose result is durable, with the probe to keep for
// it, waiting for its ack.
type finished struct {
	l queue.Lease
	p queue.Visit
}

// ackLoop acks the leases workers hand over, as many per AckAll call as
// are waiting: the queue sees one round trip for them, and no worker waits
// on its own. Each lease's slot of sem is freed once its ack is answered,
// so at most Concurrency hosts are ever leased and not yet acked. It
// returns once acks is closed and drained.
func (w *Loop) ackLoop(ctx, bg context.Context, acks <-chan finished, sem <-chan struct{}) {
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
		w.ackAll(ctx, bg, batch)
		for range batch {
			<-sem
		}
	}
}

// ackAll keeps the probes of fs and acks their leases, reporting each
// outcome, trying again while the queue
// cannot be reached (a Redis restarting, a network cut) until the last of
// the leases would expire or ctx (the work's context) ends: an ack given up
// on leaves the host to be probed again once its lease expires, though its
// result is written.
func (w *Loop) ackAll(ctx, bg context.Context, fs []finished) {
	ls := make([]queue.Lease, len(fs))
	ps := make([]queue.Visit, len(fs))
	for i, f := range fs {
		ls[i], ps[i] = f.l, f.p
	}
	var ok []bool
	var err error
	if w.cfg.Held != nil {
		var held bool
		if ok, held, err = w.ackOrHold(ctx, bg, fs, ls, ps); held {
			for _, l := range ls {
				w.untrack(l.ID)
			}
			return
		}
	} else {
		ok, err = w.ackRetrying(ctx, bg, ls, ps)
	}
	for i, l := range ls {
		w.untrack(l.ID)
		switch {
		case err != nil:
			w.log.Error("ack_error", "host", l.Item.Host, "err", err)
		case !ok[i]:
			w.m.LeaseLost.Inc()
			w.log.Warn("lease_lost", "host", l.Item.Host, "lease", l.ID,
				"note", "the lease expired and was reclaimed; the host is probed again (its output is deduplicated)")
		default:
			w.done.Add(1)
			w.m.Acked.Inc()
		}
	}
}

// ackRetrying calls AckAll with ls and their probes ps (one call keeps
// both, so an acked host always has its record) until it answers, backing
// off from 100 ms to 5 s, for as long as the last lease of ls holds and ctx
// lasts; it logs ack_retry once.
func (w *Loop) ackRetrying(ctx, bg context.Context, ls []queue.Lease, ps []queue.Visit) ([]bool, error) {
	last := ls[0].Deadline
	for _, l := range ls[1:] {
		if l.Deadline.After(last) {
			last = l.Deadline
		}
	}
	for try, wait := 0, 100*time.Millisecond; ; try, wait = try+1, min(2*wait, 5*time.Second) {
		ok, err := w.q.AckAll(bg, ls, ps)
		w.noteErr(bg, err)
		if err == nil || errors.Is(err, queue.ErrClosed) || time.Until(last) < wait {
			return ok, err
		}
		if try == 0 {
			w.log.Warn("ack_retry", "count", len(ls), "hosts", hostList(ls), "err", err, "until", last.Format(time.RFC3339))
		}
		select {
		case <-ctx.Done():
			return ok, err
		case <-time.After(wait):
		}
	}
}
