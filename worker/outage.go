package worker

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/spyder-crawler/spyder/queue"
)

// ReclaimHoldoff is how long a loop waits, after the queue answers again
// following an outage, before it reclaims expired leases: leases of live
// probes may have passed their deadline while the queue could not be
// reached, and their holders renew them within a second or two of it
// answering (see [Loop.Run]). Only then are the leases still expired those
// of probes that died.
const ReclaimHoldoff = 5 * time.Second

// link follows whether the queue answers, as the loop's own calls find it.
// The end of an outage closes the channel comeback returned, which wakes
// every heartbeat (to renew its lease at once rather than at its next
// tick) and the replay of held writes. It is safe for concurrent use.
type link struct {
	*env
	inflight func() int // hosts in flight, for the log lines

	mu   sync.Mutex
	down time.Time     // start of the current outage; zero while up
	upAt time.Time     // end of the last outage; zero if none
	back chan struct{} // closed at the end of the current outage
}

func newLink(e *env, inflight func() int) *link {
	return &link{env: e, inflight: inflight, back: make(chan struct{})}
}

// failed notes a call the queue did not answer, and reports whether that
// starts an outage.
func (k *link) failed() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.down.IsZero() {
		return false
	}
	k.down = time.Now()
	return true
}

// answered notes a call the queue answered; when that ends an outage it
// wakes the waiters of comeback and returns how long the outage lasted,
// else 0.
func (k *link) answered() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.down.IsZero() {
		return 0
	}
	now := time.Now()
	d := max(now.Sub(k.down), time.Nanosecond)
	k.down, k.upAt = time.Time{}, now
	close(k.back)
	k.back = make(chan struct{})
	return d
}

// comeback returns a channel closed when the queue next answers after an
// outage.
func (k *link) comeback() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.back
}

// isDown reports whether the last call found the queue unreachable.
func (k *link) isDown() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.down.IsZero()
}

// holdoff returns how long reclaiming must still wait: ReclaimHoldoff
// after the end of the last outage.
func (k *link) holdoff() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.upAt.IsZero() {
		return 0
	}
	return ReclaimHoldoff - time.Since(k.upAt)
}

// noteErr feeds the outcome of a call to the queue into the link: errors
// that say the queue answered (a lost lease, refused writes) or that the
// caller gave up (a cancelled ctx, a closed store) are not an outage.
func (k *link) noteErr(ctx context.Context, err error) {
	switch {
	case err == nil, errors.Is(err, queue.ErrLeaseLost), writesRefused(err):
		k.noteUp()
	case ctx.Err() != nil, errors.Is(err, queue.ErrClosed):
	default:
		if k.failed() {
			k.log.Warn("queue_unreachable", "err", err, "in_flight", k.inflight(),
				"note", "in-flight work is kept; leases are renewed and kept writes replayed as soon as it answers")
		}
	}
}

// noteUp notes that the queue answered, and logs queue_reachable when
// that ends an outage.
func (k *link) noteUp() {
	if d := k.answered(); d > 0 {
		k.log.Info("queue_reachable", "down_for", d.Round(time.Millisecond).String(), "renewing", k.inflight())
	}
}

// reachable reports whether the queue answers now (one Stats call), and
// feeds the answer into the link.
func (k *link) reachable(ctx context.Context) bool {
	_, err := k.q.Stats(ctx)
	k.noteErr(ctx, err)
	return err == nil
}

// waitQueue waits, after a call that failed with err, until the queue
// answers again, and reports true; false when err was not an outage (the
// queue answers, or refuses writes) or ctx ended first. A call that lost
// its connection is an outage even when the queue answers by the time it
// is asked: the outage may have ended in between.
func (k *link) waitQueue(ctx context.Context, err error) bool {
	if err == nil || writesRefused(err) || errors.Is(err, queue.ErrClosed) {
		return false
	}
	if k.reachable(ctx) {
		return lostConnection(err)
	}
	for {
		back := k.comeback()
		select {
		case <-ctx.Done():
			return false
		case <-back:
			return true
		case <-time.After(leaseRetry):
			if k.reachable(ctx) {
				return true
			}
		}
	}
}

// lostConnection reports whether err is a connection that failed under the
// call: refused, reset, timed out or closed by the other end. A bare
// errno is not one: a full disk is no outage.
func lostConnection(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
