package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/queue"
)

// watchQueue is a loop's queue, every call passed on, watched by a test:
// the hosts each Lease handed the loop, the Reclaim calls under way, the
// Extend calls that renewed a lease; and the next Extend failed on demand.
type watchQueue struct {
	queue.Work
	reclaiming atomic.Int64 // Reclaim calls under way
	renewed    atomic.Int64 // Extend calls that succeeded

	mu     sync.Mutex
	leased map[string]int // times each host was leased to the loop
	fail   func() error   // returned by the next Extend instead of calling the queue
	acks   *gate          // when set, AckAll waits for it
	epoch  int            // moved on by the test (nextEpoch)
	fresh  map[string]int // by lease ID: the epoch its last Lease or Extend call began in
}

// watchLoop puts a watchQueue between f's loop and its queue.
func watchLoop(f *loopFixture) *watchQueue {
	q := &watchQueue{Work: f.l.q, leased: map[string]int{}, fresh: map[string]int{}}
	f.l.q = q
	return q
}

func (q *watchQueue) Lease(ctx context.Context, n int, ttl, wait time.Duration) ([]queue.Lease, error) {
	epoch := q.currentEpoch() // the deadlines are from this epoch's clock, or a later one's
	ls, err := q.Work.Lease(ctx, n, ttl, wait)
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, l := range ls {
		q.leased[string(l.Item.Host)]++
		q.fresh[l.ID] = epoch
	}
	return ls, err
}

func (q *watchQueue) currentEpoch() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.epoch
}

// nextEpoch starts a new epoch: no lease is fresh until leased or
// extended again.
func (q *watchQueue) nextEpoch() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.epoch++
}

// allFresh reports whether every lease of ids was leased or extended by a
// call begun in the current epoch.
func (q *watchQueue) allFresh(ids []string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, id := range ids {
		if e, ok := q.fresh[id]; !ok || e != q.epoch {
			return false
		}
	}
	return true
}

// leasedTwice returns the hosts leased to the loop more than once.
func (q *watchQueue) leasedTwice() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for h, n := range q.leased {
		if n > 1 {
			out = append(out, h)
		}
	}
	return out
}

// holdAcks makes AckAll wait until the gate returned is opened.
func (q *watchQueue) holdAcks(t *testing.T) *gate {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.acks = newGate(t)
	return q.acks
}

func (q *watchQueue) AckAll(ctx context.Context, ls []queue.Lease, ps []queue.Visit) ([]bool, error) {
	q.mu.Lock()
	g := q.acks
	q.mu.Unlock()
	if g != nil {
		g.wait()
	}
	return q.Work.AckAll(ctx, ls, ps)
}

func (q *watchQueue) Reclaim(ctx context.Context, ttl time.Duration, maxAttempts int) (queue.ReclaimResult, error) {
	q.reclaiming.Add(1)
	defer q.reclaiming.Add(-1)
	return q.Work.Reclaim(ctx, ttl, maxAttempts)
}

// failNext makes the next Extend return fail() instead of reaching the
// queue.
func (q *watchQueue) failNext(fail func() error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fail = fail
}

func (q *watchQueue) Extend(ctx context.Context, l queue.Lease, ttl time.Duration) (queue.Lease, error) {
	q.mu.Lock()
	fail := q.fail
	q.fail = nil
	q.mu.Unlock()
	if fail != nil {
		return l, fail()
	}
	epoch := q.currentEpoch()
	nl, err := q.Work.Extend(ctx, l, ttl)
	if err == nil {
		q.renewed.Add(1)
		q.mu.Lock()
		q.fresh[nl.ID] = epoch
		q.mu.Unlock()
	}
	return nl, err
}

// gate holds calls until it is opened.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

// newGate returns a closed gate, opened at the test's end if not before,
// so that no call waits past it.
func newGate(t *testing.T) *gate {
	g := &gate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

// open lets the calls through, those waiting and those to come.
func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

func (g *gate) wait() { <-g.ch }
