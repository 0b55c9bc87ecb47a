package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// heldEntry is one write to the queue that did not reach it, kept in
// Config.Held until it does: hosts to seed (discovered by a probe), or
// acks with their probe records.
type heldEntry struct {
	Seed []host.Name `json:"seed,omitempty"`
	Acks []heldAck   `json:"acks,omitempty"`
}

type heldAck struct {
	Lease queue.Lease `json:"lease"`
	Probe queue.Visit `json:"probe"`
}

// holdBehind appends e to the held writes when earlier ones are still
// held, so that writes reach the queue in the order they were made, and
// reports whether it did.
func (w *Loop) holdBehind(ctx context.Context, e heldEntry) (bool, error) {
	if w.cfg.Held == nil || !w.holding.Load() {
		return false, nil
	}
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	if !w.holding.Load() {
		return false, nil
	}
	return true, w.putHeldLocked(ctx, e)
}

// hold appends e to the held writes.
func (w *Loop) hold(ctx context.Context, e heldEntry) error {
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	return w.putHeldLocked(ctx, e)
}

func (w *Loop) putHeldLocked(ctx context.Context, e heldEntry) error {
	data, err := json.Marshal(e)
	if err == nil {
		err = w.cfg.Held.Put(ctx, data)
	}
	if err != nil {
		return fmt.Errorf("hold in the probe's own file: %w", err)
	}
	if !w.holding.Swap(true) {
		w.log.Warn("queue_held", "note", "writes the queue did not take are kept in the probe's own file and replayed in order once it answers")
	}
	select {
	case w.heldKick <- struct{}{}:
	default:
	}
	return nil
}

// Holding reports whether writes are held for the queue.
func (w *Loop) Holding() bool { return w.holding.Load() }

// replayLoop replays the held writes whenever some are held: at once, when
// the queue answers again after an outage, and every leaseRetry while a
// replay fails. It returns when ctx ends.
func (w *Loop) replayLoop(ctx context.Context) {
	try := true
	for {
		if try && w.holding.Load() {
			w.replayHeld(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-w.link.comeback():
			try = true
		case <-w.heldKick:
			try = !w.link.isDown() // else the comeback wakes this loop
		case <-time.After(leaseRetry):
			try = true
		}
	}
}

// replayHeld applies the held writes to the queue oldest first, removing
// each once the queue took it, until none is left or one fails (it stays,
// for the next try). It reports whether none is left.
func (w *Loop) replayHeld(ctx context.Context) bool {
	n := 0
	defer func() {
		if n > 0 {
			w.log.Info("held_replayed", "entries", n)
		}
	}()
	for {
		id, data, err := w.cfg.Held.Peek(ctx)
		if err != nil {
			w.log.Error("held_error", "err", err)
			return false
		}
		if id == "" && w.heldEmpty(ctx) {
			return true
		}
		if id == "" {
			continue
		}
		var e heldEntry
		if err := json.Unmarshal(data, &e); err != nil {
			w.log.Error("held_undecodable", "err", err, "entry", string(data[:min(len(data), 200)]))
		} else if err := w.apply(ctx, e); err != nil {
			w.noteErr(ctx, err)
			if !w.link.isDown() {
				w.log.Warn("held_replay_error", "err", err)
			}
			return false
		}
		w.noteUp()
		if err := w.cfg.Held.Remove(ctx, id); err != nil {
			w.log.Error("held_error", "err", err)
			return false
		}
		n++
	}
}

// heldEmpty reports whether nothing is held, and then lets writes go
// straight to the queue again.
func (w *Loop) heldEmpty(ctx context.Context) bool {
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	n, err := w.cfg.Held.Len(ctx)
	if err != nil || n > 0 {
		return false
	}
	w.holding.Store(false)
	return true
}

// apply makes one held write: a seed, or acks whose leases may have
// been reclaimed by another probe meanwhile. Those are reported lost: the
// result was written, the probe record is kept, and the lease's new holder
// probes the host again (its output is deduplicated).
func (w *Loop) apply(ctx context.Context, e heldEntry) error {
	if len(e.Seed) > 0 {
		res, err := w.q.Seed(ctx, e.Seed)
		if err != nil {
			return err
		}
		w.seen.Add(int64(res.Added))
		w.m.Discovered.Add(float64(res.Added))
	}
	if len(e.Acks) == 0 {
		return nil
	}
	ls, ps := make([]queue.Lease, len(e.Acks)), make([]queue.Visit, len(e.Acks))
	for i, a := range e.Acks {
		ls[i], ps[i] = a.Lease, a.Probe
	}
	ok, err := w.q.AckAll(ctx, ls, ps)
	if err != nil {
		return err
	}
	for i, l := range ls {
		if ok[i] {
			w.done.Add(1)
			w.m.Acked.Inc()
			continue
		}
		w.m.LeaseLost.Inc()
		w.log.Warn("lease_lost", "host", l.Item.Host, "lease", l.ID, "during", "held ack",
			"note", "the lease was not held when the held ack was replayed: it expired and was reclaimed (the host is probed again; its output is deduplicated), or the ack's first try reached Redis before it went away (the host is done)")
	}
	return nil
}

// ackOrHold acks fs through the held writes: behind those already held,
// or held itself when the queue does not take it. held reports that fs
// went to Config.Held, to be acked when it is replayed; otherwise ok and
// err are AckAll's, as ackRetrying returns them.
func (w *Loop) ackOrHold(ctx, bg context.Context, fs []finished, ls []queue.Lease, ps []queue.Visit) (ok []bool, held bool, err error) {
	e := heldEntry{Acks: make([]heldAck, len(fs))}
	for i, f := range fs {
		e.Acks[i] = heldAck{f.l, f.p}
	}
	if held, herr := w.holdBehind(bg, e); held && herr == nil {
		return nil, true, nil
	}
	ok, err = w.q.AckAll(bg, ls, ps)
	w.noteErr(bg, err)
	if err == nil || errors.Is(err, queue.ErrClosed) {
		return ok, false, err
	}
	if herr := w.hold(bg, e); herr != nil {
		w.log.Error("held_error", "err", herr)
		ok, err = w.ackRetrying(ctx, bg, ls, ps)
		return ok, false, err
	}
	return nil, true, nil
}

// replayLast tries once more, for a few seconds, to replay what is held
// as the run ends; what is left stays in Config.Held for the next start.
func (w *Loop) replayLast(bg context.Context) {
	if !w.holding.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if !w.replayHeld(ctx) {
		n, _ := w.cfg.Held.Len(bg)
		w.log.Warn("held_kept", "entries", n, "note", "kept in the probe's own file; the next run on the same --state-dir replays them first")
	}
}
