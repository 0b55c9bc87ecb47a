package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// spool is the service that keeps the writes the queue does not take in
// Config.Held, in the order they were made, and replays them once it
// answers: while some are held (holding), new writes queue behind them,
// so that the queue sees them in order. Without Config.Held it holds
// nothing.
type spool struct {
	*env
	link *link

	mu      sync.Mutex    // orders writes to Config.Held with holding
	holding atomic.Bool   // Config.Held may hold writes: new ones queue behind them
	kick    chan struct{} // wakes replayLoop; capacity 1
}

// newSpool returns the spool of e, holding until a replay finds
// Config.Held empty.
func newSpool(e *env, k *link) *spool {
	s := &spool{env: e, link: k, kick: make(chan struct{}, 1)}
	s.holding.Store(e.cfg.Held != nil)
	return s
}

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
func (s *spool) holdBehind(ctx context.Context, e heldEntry) (bool, error) {
	if !s.isHolding() {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.holding.Load() {
		return false, nil
	}
	return true, s.putHeldLocked(ctx, e)
}

// hold appends e to the held writes.
func (s *spool) hold(ctx context.Context, e heldEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.putHeldLocked(ctx, e)
}

func (s *spool) putHeldLocked(ctx context.Context, e heldEntry) error {
	data, err := json.Marshal(e)
	if err == nil {
		err = s.cfg.Held.Put(ctx, data)
	}
	if err != nil {
		return fmt.Errorf("hold in the probe's own file: %w", err)
	}
	if !s.holding.Swap(true) {
		s.log.Warn("queue_held", "note", "writes the queue did not take are kept in the probe's own file and replayed in order once it answers")
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return nil
}

// isHolding reports whether writes are held for the queue.
func (s *spool) isHolding() bool { return s.cfg.Held != nil && s.holding.Load() }

// replayLoop replays the held writes whenever some are held: at once, when
// the queue answers again after an outage, and every leaseRetry while a
// replay fails. It returns when ctx ends.
func (s *spool) replayLoop(ctx context.Context) {
	try := true
	for {
		if try && s.holding.Load() {
			s.replayHeld(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.link.comeback():
			try = true
		case <-s.kick:
			try = !s.link.isDown() // else the comeback wakes this loop
		case <-time.After(leaseRetry):
			try = true
		}
	}
}

// replayHeld applies the held writes to the queue oldest first, removing
// each once the queue took it, until none is left or one fails (it stays,
// for the next try). It reports whether none is left.
func (s *spool) replayHeld(ctx context.Context) bool {
	n := 0
	defer func() {
		if n > 0 {
			s.log.Info("held_replayed", "entries", n)
		}
	}()
	for {
		id, data, err := s.cfg.Held.Peek(ctx)
		if err != nil {
			s.log.Error("held_error", "err", err)
			return false
		}
		if id == "" && s.heldEmpty(ctx) {
			return true
		}
		if id == "" {
			continue
		}
		var e heldEntry
		if err := json.Unmarshal(data, &e); err != nil {
			s.log.Error("held_undecodable", "err", err, "entry", string(data[:min(len(data), 200)]))
		} else if err := s.apply(ctx, e); err != nil {
			s.link.noteErr(ctx, err)
			if !s.link.isDown() {
				s.log.Warn("held_replay_error", "err", err)
			}
			return false
		}
		s.link.noteUp()
		if err := s.cfg.Held.Remove(ctx, id); err != nil {
			s.log.Error("held_error", "err", err)
			return false
		}
		n++
	}
}

// heldEmpty reports whether nothing is held, and then lets writes go
// straight to the queue again.
func (s *spool) heldEmpty(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.cfg.Held.Len(ctx)
	if err != nil || n > 0 {
		return false
	}
	s.holding.Store(false)
	return true
}

// apply makes one held write: a seed, or acks whose leases may have
// been reclaimed by another probe meanwhile. Those are reported lost: the
// result was written, the probe record is kept, and the lease's new holder
// probes the host again (its output is deduplicated).
func (s *spool) apply(ctx context.Context, e heldEntry) error {
	if len(e.Seed) > 0 {
		res, err := s.q.Seed(ctx, e.Seed)
		if err != nil {
			return err
		}
		s.seen.Add(int64(res.Added))
		s.m.Discovered.Add(float64(res.Added))
	}
	if len(e.Acks) == 0 {
		return nil
	}
	ls, ps := make([]queue.Lease, len(e.Acks)), make([]queue.Visit, len(e.Acks))
	for i, a := range e.Acks {
		ls[i], ps[i] = a.Lease, a.Probe
	}
	ok, err := s.q.AckAll(ctx, ls, ps)
	if err != nil {
		return err
	}
	for i, l := range ls {
		if ok[i] {
			s.done.Add(1)
			s.m.Acked.Inc()
			continue
		}
		s.m.LeaseLost.Inc()
		s.log.Warn("lease_lost", "host", l.Item.Host, "lease", l.ID, "during", "held ack",
			"note", "the lease was not held when the held ack was replayed: it expired and was reclaimed (the host is probed again; its output is deduplicated), or the ack's first try reached Redis before it went away (the host is done)")
	}
	return nil
}

// replayLast tries once more, for a few seconds, to replay what is held
// as the run ends; what is left stays in Config.Held for the next start.
func (s *spool) replayLast(bg context.Context) {
	if !s.holding.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if !s.replayHeld(ctx) {
		n, _ := s.cfg.Held.Len(bg)
		s.log.Warn("held_kept", "entries", n, "note", "kept in the probe's own file; the next run on the same --state-dir replays them first")
	}
}
