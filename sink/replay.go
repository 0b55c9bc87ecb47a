package sink

import (
	"context"
	"math/rand/v2"
	"time"
)

// replayLoop delivers spooled batches until Close.
func (s *Ingest) replayLoop() {
	defer close(s.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	delay := time.Second
	for {
		n, err := s.replay(ctx)
		if ctx.Err() != nil {
			return
		}
		if n > 0 {
			s.log.Info("ingest_replayed", "url", s.url, "batches", n)
		}
		wait := replayPollGap
		if err != nil {
			wait = jitter(delay)
			delay = min(delay*2, maxBackoff)
		} else {
			delay = time.Second
		}
		select {
		case <-s.stop:
			return
		case <-s.kick:
			if s.down.Load() {
				// Spooled while down: wait the backoff before trying.
				select {
				case <-s.stop:
					return
				case <-time.After(wait):
				}
			}
		case <-time.After(wait):
		}
	}
}

// replay delivers the spool oldest first until it is empty (the endpoint
// is up again) or a delivery fails.
func (s *Ingest) replay(ctx context.Context) (int, error) {
	n := 0
	for {
		id, data, err := s.spool.Peek(ctx)
		if err != nil {
			return n, err
		}
		if id == "" {
			s.m.SpoolDepth.Set(0)
			if s.down.Swap(false) {
				s.log.Info("ingest_up", "url", s.url)
			}
			return n, nil
		}
		if err := s.post(ctx, data); err != nil {
			s.down.Store(true)
			return n, err
		}
		if err := s.spool.Remove(ctx, id); err != nil {
			return n, err
		}
		n++
		s.m.Replayed.Inc()
		s.m.SpoolDepth.Dec()
	}
}

// Close stops the replayer; what is still spooled stays for the next run.
func (s *Ingest) Close() error {
	s.closer.Do(func() { close(s.stop) })
	<-s.done
	// One last delivery attempt, so a run that ends soon after the endpoint
	// came back leaves nothing behind.
	ctx, cancel := context.WithTimeout(context.Background(), s.client.Timeout+time.Second)
	defer cancel()
	if n, _ := s.replay(ctx); n > 0 {
		s.log.Info("ingest_replayed", "url", s.url, "batches", n)
	}
	if n, err := s.spool.Len(context.Background()); err == nil && n > 0 {
		s.log.Warn("ingest_spooled", "url", s.url, "batches", n, "note", "kept in the store; the next run replays them")
	}
	return nil
}

func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}
