package main

import (
	"context"
	"time"
)

// watch polls the queue every second for the metrics, the dashboard's
// history and the progress line, and sends this probe's heartbeat every
// beatEvery, until ctx ends.
func watch(ctx context.Context, r *running, lw *lineWriter, progress bool) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	start := time.Now()
	var lastBeat time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			st, err := r.q.Stats(qctx)
			cancel()
			if err != nil {
				continue
			}
			r.m.ObserveQueue(st)
			r.loop.NoteSeen(st.Seen)
			pt := r.board.Record(now, st)
			if now.Sub(lastBeat) >= beatEvery-100*time.Millisecond {
				r.heartbeat(ctx, pt, now)
				lastBeat = now
			}
			if progress {
				own, all := r.board.Rates()
				lw.draw(progressLine(st, pt.Inflight, r.loop.Limit(), own, all, now.Sub(start)))
			}
		}
	}
}
