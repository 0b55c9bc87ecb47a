package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spyder-crawler/spyder/concurrency"
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

// progressLine formats one progress line from the queue's snapshot st,
// the hosts this process has in flight and its concurrency limit (with
// why it is what it is, and the visits handed back for overload once
// there are some), its rate and the whole queue's (hosts/s over the last
// minute) and the time since the run started:
//
//	done 1200/10000 (12.0%) · pending 8288 · in flight 512/640 (saturated) · dead 0 · 41.5 hosts/s · elapsed 30s · ETA 3m32s
//
// Done counts hosts finished by any probe, dead ones apart. The ETA divides
// what is left by the queue's rate, and is never "0s" while hosts are in
// flight: once nothing is pending it says how many are being finished and
// how long the oldest has been at it.
func progressLine(st queue.Stats, inflight int, lim concurrency.State, own, all float64, elapsed time.Duration) string {
	left := st.Pending + max(st.Processing, int64(inflight))
	done := max(st.Seen-st.Pending-st.Processing-st.Dead, 0)
	total := max(st.Seen, done+left+st.Dead)
	pct := 0.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	limit := ""
	if lim.Limit > 0 {
		limit = fmt.Sprintf("/%d (%s)", lim.Limit, lim.Why.Cause)
	}
	if lim.Overload > 0 {
		limit += fmt.Sprintf(" · requeued %d", lim.Overload)
	}
	return fmt.Sprintf("done %d/%d (%.1f%%) · pending %d · in flight %d%s · dead %d · %.1f hosts/s · elapsed %s · ETA %s",
		done, total, pct, st.Pending, inflight, limit, st.Dead, own, elapsed.Round(time.Second), eta(st, left, all))
}

// eta estimates the time left; see progressLine.
func eta(st queue.Stats, left int64, perSec float64) string {
	switch {
	case left == 0:
		return "0s"
	case st.Pending == 0:
		return fmt.Sprintf("finishing %d in flight (oldest %s)", left, st.OldestLeaseAge.Round(time.Second))
	case perSec <= 0:
		return "-"
	}
	d := time.Duration(float64(left) / perSec * float64(time.Second))
	return max(d.Round(time.Second), time.Second).String()
}
