package main

import (
	"context"
	"time"
)

// watch polls the queue every second for the metrics and the progress
// line until ctx ends.
func watch(ctx context.Context, r *running, lw *lineWriter, progress bool) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var rt rate
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
			perSec := rt.add(now, r.loop.Done())
			if progress {
				lw.draw(progressLine(r.loop.Done(), st, r.loop.Inflight(), perSec))
			}
		}
	}
}
