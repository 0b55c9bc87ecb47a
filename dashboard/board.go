// Package dashboard is the live view of a crawl: a page served at / on
// --metrics-addr (and on the control socket beside a bbolt file) that
// shows the queue's depth over time, hosts per second, outcomes, the hosts
// in flight, the probes of a fleet and the dead items with a button that
// retries them, and the JSON API the page and `spyder queue` read. The page
// and its script are embedded: it needs no network.
//
// A [Board] keeps the history the charts draw: the run's watch loop calls
// [Board.Record] once a second, and the rates (over the last minute) are
// computed from that history, so the progress line and the page agree.
//
// A standalone run also serves the API on a unix socket beside its bbolt
// file ([ServeSocket]), which `spyder queue` reaches through a [Client]
// while the run holds the file.
package dashboard

import (
	"context"
	"sync"
	"time"

	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

// Queue is what the dashboard reads and changes in the store.
type Queue interface {
	Stats(ctx context.Context) (queue.Stats, error)
	Dead(ctx context.Context, limit int) ([]queue.DeadItem, error)
	RetryDead(ctx context.Context, limit int) (int, error)
	Probes(ctx context.Context) ([]store.ProbeBeat, error)
}

// Process is what this process says about its own work.
type Process struct {
	Done     int64            // hosts it acknowledged
	Inflight int              // hosts it is probing or writing now
	Outcomes map[string]int64 // hosts written, by page outcome
	Limit    int              // hosts it may have in flight now
	LimitWhy string           // why the limit is what it is
	Requeued int64            // visits handed back: timed out while it was saturated
}

// Point is one second of the history: the queue and this process's count.
type Point struct {
	T          int64   `json:"t"` // Unix ms
	Pending    int64   `json:"pending"`
	Processing int64   `json:"processing"`
	Dead       int64   `json:"dead"`
	Finished   int64   `json:"finished"` // queue-wide: seen - pending - processing
	Done       int64   `json:"done"`     // this process's acked hosts
	Inflight   int     `json:"inflight"` // this process's hosts in flight
	Rate       float64 `json:"rate"`     // this process's hosts/s over the last minute
}

// Limits of the history.
const (
	maxPoints  = 3600             // an hour of one-second points
	rateWindow = 60 * time.Second // rates are over this long
)

// Board holds a run's history and serves the dashboard. It is safe for
// concurrent use.
type Board struct {
	q      Queue
	name   string
	shared bool
	start  time.Time
	proc   func() Process

	mu   sync.Mutex
	hist []Point // oldest first, at most maxPoints
}

// New returns a Board over q, named name (the store's name), for a run
// that started at start; shared says the queue is a fleet's. proc reports
// this process's work when asked.
func New(q Queue, name string, shared bool, start time.Time, proc func() Process) *Board {
	return &Board{q: q, name: name, shared: shared, start: start, proc: proc}
}

// Record adds the point of now: the queue's snapshot st and this process's
// work. It returns the point, with its rate.
func (b *Board) Record(now time.Time, st queue.Stats) Point {
	p := b.proc()
	pt := Point{
		T: now.UnixMilli(), Pending: st.Pending, Processing: st.Processing, Dead: st.Dead,
		Finished: max(st.Seen-st.Pending-st.Processing, 0), Done: p.Done, Inflight: p.Inflight,
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.hist) == maxPoints {
		b.hist = append(b.hist[:0], b.hist[1:]...)
	}
	b.hist = append(b.hist, pt)
	own, _ := b.ratesLocked()
	b.hist[len(b.hist)-1].Rate = own
	return b.hist[len(b.hist)-1]
}

// Rates returns this process's hosts/s and the whole queue's (hosts
// finished by any probe) over the last minute, or over the run so far
// when it is younger.
func (b *Board) Rates() (own, all float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ratesLocked()
}

func (b *Board) ratesLocked() (own, all float64) {
	if len(b.hist) < 2 {
		return 0, 0
	}
	last := b.hist[len(b.hist)-1]
	first := last
	for i := len(b.hist) - 2; i >= 0 && last.T-b.hist[i].T <= rateWindow.Milliseconds(); i-- {
		first = b.hist[i]
	}
	dt := float64(last.T-first.T) / 1000
	if dt <= 0 {
		return 0, 0
	}
	return max(float64(last.Done-first.Done)/dt, 0), max(float64(last.Finished-first.Finished)/dt, 0)
}

// history returns a copy of the points of the last d.
func (b *Board) history(now time.Time, d time.Duration) []Point {
	b.mu.Lock()
	defer b.mu.Unlock()
	from := now.Add(-d).UnixMilli()
	i := len(b.hist)
	for i > 0 && b.hist[i-1].T >= from {
		i--
	}
	return append([]Point(nil), b.hist[i:]...)
}
