package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spyder-crawler/spyder/queue"
)

// lineWriter is stderr shared by the logs and the progress line: a log
// write first clears the progress line, which the next tick redraws.
type lineWriter struct {
	mu     sync.Mutex
	w      io.Writer
	drawn  bool // a progress line is on screen
	active bool // progress lines are drawn at all
}

func (lw *lineWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.drawn {
		io.WriteString(lw.w, "\r\033[K")
		lw.drawn = false
	}
	return lw.w.Write(p)
}

// draw replaces the progress line with s.
func (lw *lineWriter) draw(s string) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	fmt.Fprintf(lw.w, "\r\033[K%s", s)
	lw.drawn = true
}

// clear removes the progress line, at the end of a run.
func (lw *lineWriter) clear() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.drawn {
		io.WriteString(lw.w, "\r\033[K")
		lw.drawn = false
	}
}

// rate estimates hosts per second over the last ten seconds.
type rate struct {
	samples []sample
}

type sample struct {
	at   time.Time
	done int64
}

func (r *rate) add(at time.Time, done int64) float64 {
	r.samples = append(r.samples, sample{at, done})
	for len(r.samples) > 1 && at.Sub(r.samples[0].at) > 10*time.Second {
		r.samples = r.samples[1:]
	}
	first := r.samples[0]
	dt := at.Sub(first.at).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(done-first.done) / dt
}

// progressLine formats one progress line.
func progressLine(done int64, st queue.Stats, inflight int, perSec float64) string {
	eta := "-"
	if perSec > 0 && st.Pending+st.Processing > 0 {
		eta = (time.Duration(float64(st.Pending+st.Processing)/perSec) * time.Second).Round(time.Second).String()
	}
	return fmt.Sprintf("done %d · pending %d · in flight %d · dead %d · %.1f hosts/s · ETA %s",
		done, st.Pending, inflight, st.Dead, perSec, eta)
}
