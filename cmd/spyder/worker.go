package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"spyder/crawl"
	"spyder/queue"
	"spyder/store/boltstore"
	"spyder/store/redisstore"
)

// prober probes one host; *crawl.Crawler is the one in use.
type prober interface {
	Probe(ctx context.Context, host string) *crawl.Result
}

// resultWriter hands a result to the output and returns once it is durable;
// *crawl.Batcher is the one in use.
type resultWriter interface {
	Add(ctx context.Context, r *crawl.Result) error
}

// Worker loop limits.
const (
	maxLeaseBatch = 256             // items asked for in one Lease call
	maxAckBatch   = 256             // leases acked in one AckAll call
	leaseWait     = time.Second     // how long Lease waits on an empty queue
	leaseRetry    = 2 * time.Second // pause after a failed Lease
	maxLoggedHost = 100             // hosts listed in one log line
)

// loop leases hosts from the queue and probes them with a fixed number of
// workers until the queue is empty (exitWhenEmpty) or its ctx is cancelled.
type loop struct {
	q             queue.Queue
	probe         prober
	out           resultWriter
	log           *slog.Logger
	m             *metrics
	concurrency   int
	leaseTTL      time.Duration
	maxAttempts   int
	grace         time.Duration
	exitWhenEmpty bool
	reclaimEvery  time.Duration
	// continuous seeds discovered hosts while fewer than maxDomains were
	// seen.
	continuous bool
	maxDomains int64

	seen atomic.Int64 // hosts in the seen set, as last known
	done atomic.Int64 // hosts acked by this process
	// seenMax is the largest seen set checkState saw; a smaller one later
	// means the queue lost its state.
	seenMax atomic.Int64

	enqMu    sync.Mutex // serialises enqueue
	mu       sync.Mutex
	inflight map[string]queue.Lease // by lease ID: leased, not yet acked or failed

	// halt ends the run with an error no retry of a host can fix (see
	// writesRefused); set by run.
	halt context.CancelCauseFunc
}

// run works until done and returns after handing back what it did not
// finish. Cancelling ctx is the shutdown signal: leasing stops, in-flight
// probes get the grace period to finish, and the rest is released.
func (w *loop) run(ctx context.Context) error {
	bg := context.WithoutCancel(ctx)
	ctx, w.halt = context.WithCancelCause(ctx)
	defer w.halt(nil)
	workCtx, cancelWork := context.WithCancel(bg)
	defer cancelWork()
	w.mu.Lock()
	w.inflight = make(map[string]queue.Lease)
	w.mu.Unlock()

	reclaimDone := make(chan struct{})
	reclaimCtx, stopReclaim := context.WithCancel(ctx)
	go func() {
		defer close(reclaimDone)
		w.reclaimLoop(reclaimCtx)
	}()
	defer func() { stopReclaim(); <-reclaimDone }()

	var wg sync.WaitGroup
	sem := make(chan struct{}, w.concurrency)
	acks := make(chan queue.Lease, w.concurrency)
	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		w.ackLoop(workCtx, bg, acks, sem)
	}()
	err := w.leaseLoop(ctx, workCtx, bg, sem, acks, &wg)

	var h haltError
	if errors.As(context.Cause(ctx), &h) {
		// Halted: what is in flight would fail the same way.
		w.log.Error("halt", "in_flight", w.inflightLen(), "err", h.error)
		cancelWork()
		err = h.error
	} else if ctx.Err() != nil {
		n := w.inflightLen()
		w.log.Info("shutdown", "in_flight", n, "grace", w.grace.String())
		t := time.AfterFunc(w.grace, func() {
			w.log.Warn("grace_expired", "in_flight", w.inflightLen())
			cancelWork()
		})
		defer t.Stop()
	}
	wg.Wait()
	close(acks)
	<-ackDone
	if rerr := w.releaseRest(bg, ctx.Err() != nil); err == nil {
		err = rerr
	}
	return err
}

// leaseLoop leases while there is room and work, starting one goroutine per
// leased item. A slot of sem is taken per lease and freed once the lease is
// acked (by ackLoop), failed or left for releaseRest.
func (w *loop) leaseLoop(ctx, workCtx, bg context.Context, sem chan struct{}, acks chan<- queue.Lease, wg *sync.WaitGroup) error {
	var downSince time.Time // first failed Lease of an outage
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		n := 1
	more:
		for n < maxLeaseBatch {
			select {
			case sem <- struct{}{}:
				n++
			default:
				break more
			}
		}
		leases, err := w.q.Lease(ctx, n, w.leaseTTL, leaseWait)
		for i := len(leases); i < n; i++ {
			<-sem
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, queue.ErrClosed) {
				return err
			}
			if downSince.IsZero() {
				downSince = time.Now()
			}
			w.log.Warn("lease_error", "err", err, "retry_in", leaseRetry.String())
			select {
			case <-time.After(leaseRetry):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		if !downSince.IsZero() {
			w.log.Info("queue_reachable", "down_for", time.Since(downSince).Round(time.Millisecond).String())
			downSince = time.Time{}
		}
		if len(leases) == 0 {
			if w.exitWhenEmpty && w.inflightLen() == 0 {
				st, err := w.q.Stats(ctx)
				if err == nil && st.Pending == 0 && st.Processing == 0 {
					if most := w.seenMax.Load(); st.Seen < most {
						// An empty queue that forgot hosts is not a finished
						// crawl: say so instead of exiting 0.
						return fmt.Errorf("the queue is empty but lost its state: it has seen %d hosts, %d earlier (Redis restarted without its data?); "+
							"restore the last `spyder queue export` snapshot with `spyder queue import` and start again", st.Seen, most)
					}
					return nil
				}
			}
			continue
		}
		w.m.leased.Add(float64(len(leases)))
		w.mu.Lock()
		for _, l := range leases {
			w.inflight[l.ID] = l
		}
		w.mu.Unlock()
		for _, l := range leases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !w.work(workCtx, bg, l, acks) {
					<-sem
				}
			}()
		}
	}
}

func (w *loop) inflightLen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.inflight)
}

func (w *loop) untrack(id string) {
	w.mu.Lock()
	delete(w.inflight, id)
	w.mu.Unlock()
}

// work probes one leased host, writes its result and hands the lease to
// acks, reporting true; ackLoop then acks it and frees its slot. A probe
// that the shutdown cut short leaves its lease tracked, for releaseRest.
func (w *loop) work(ctx, bg context.Context, l queue.Lease, acks chan<- queue.Lease) bool {
	host := l.Item.Host
	w.m.inflight.Inc()
	defer w.m.inflight.Dec()

	hbCtx, stopHB := context.WithCancel(ctx)
	hbDone := make(chan queue.Lease, 1)
	go func() { hbDone <- w.heartbeat(hbCtx, bg, l) }()
	endHeartbeat := func() queue.Lease { stopHB(); return <-hbDone }

	res := w.probe.Probe(ctx, host)
	if ctx.Err() != nil { // cut short by the shutdown: released, not written
		endHeartbeat()
		return false
	}
	// A finished probe is written even when the grace period ends
	// meanwhile: its batch is due within the batcher's delay, and releasing
	// it now could write it twice.
	err := w.out.Add(bg, res)
	l = endHeartbeat()
	if err != nil {
		err = fmt.Errorf("output: %w", err)
	} else if w.continuous && len(res.Discovered) > 0 {
		// Before the ack: hosts found but not queued would be lost.
		if err = w.enqueue(bg, res.Discovered); err != nil {
			err = fmt.Errorf("enqueue discovered hosts: %w", err)
		}
	}
	if err != nil && writesRefused(err) {
		// Not the host's fault, and every other host would fail alike:
		// stop the run rather than fail each host to dead. The lease
		// stays tracked and is released.
		w.halt(haltError{err})
		return false
	}
	if err != nil {
		w.fail(bg, l, err.Error())
		return false
	}
	acks <- l
	return true
}

// ackLoop acks the leases workers hand over, as many per AckAll call as
// are waiting: the queue sees one round trip for them, and no worker waits
// on its own. Each lease's slot of sem is freed once its ack is answered,
// so at most --concurrency hosts are ever leased and not yet acked. It
// returns once acks is closed and drained.
func (w *loop) ackLoop(ctx, bg context.Context, acks <-chan queue.Lease, sem <-chan struct{}) {
	for l := range acks {
		batch := []queue.Lease{l}
	more:
		for len(batch) < maxAckBatch {
			select {
			case l, ok := <-acks:
				if !ok {
					break more
				}
				batch = append(batch, l)
			default:
				break more
			}
		}
		w.ackAll(ctx, bg, batch)
		for range batch {
			<-sem
		}
	}
}

// ackAll acks ls and reports each outcome, trying again while the queue
// cannot be reached (a Redis restarting, a network cut) until the last of
// the leases would expire or ctx (the work's context) ends: an ack given up
// on leaves the host to be probed again once its lease expires, though its
// result is written.
func (w *loop) ackAll(ctx, bg context.Context, ls []queue.Lease) {
	last := ls[0].Deadline
	for _, l := range ls[1:] {
		if l.Deadline.After(last) {
			last = l.Deadline
		}
	}
	var ok []bool
	var err error
retry:
	for try, wait := 0, 100*time.Millisecond; ; try, wait = try+1, min(2*wait, 5*time.Second) {
		ok, err = w.q.AckAll(bg, ls)
		if err == nil || errors.Is(err, queue.ErrClosed) || time.Until(last) < wait {
			break
		}
		if try == 0 {
			w.log.Warn("ack_retry", "count", len(ls), "hosts", hostList(ls), "err", err, "until", last.Format(time.RFC3339))
		}
		select {
		case <-ctx.Done():
			break retry
		case <-time.After(wait):
		}
	}
	for i, l := range ls {
		w.untrack(l.ID)
		switch {
		case err != nil:
			w.log.Error("ack_error", "host", l.Item.Host, "err", err)
		case !ok[i]:
			w.m.leaseLost.Inc()
			w.log.Warn("lease_lost", "host", l.Item.Host, "lease", l.ID,
				"note", "the lease expired and was reclaimed; the host is probed again (its output is deduplicated)")
		default:
			w.done.Add(1)
			w.m.acked.Inc()
		}
	}
}

// haltError is the cause the loop's context is cancelled with when the run
// must stop on an error (a signal cancels it with another).
type haltError struct{ error }

// writesRefused reports whether err says the store of the output will take
// no write until someone acts: a disk full, over quota, read-only, past the
// file size limit or failing; the bbolt file (emitted set, spool) taking no
// write; or Redis refusing writes (see [redisstore.RefusesWrites]).
func writesRefused(err error) bool {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EFBIG, syscall.EIO, boltstore.ErrWrite} {
		if errors.Is(err, e) {
			return true
		}
	}
	return redisstore.RefusesWrites(err)
}

// heartbeat extends l every third of the lease TTL until ctx ends, and
// returns the lease as last extended.
func (w *loop) heartbeat(ctx, bg context.Context, l queue.Lease) queue.Lease {
	t := time.NewTicker(max(w.leaseTTL/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return l
		case <-t.C:
		}
		nl, err := w.q.Extend(bg, l, w.leaseTTL)
		switch {
		case errors.Is(err, queue.ErrLeaseLost):
			w.log.Warn("lease_lost", "host", l.Item.Host, "lease", l.ID, "during", "heartbeat")
			return l
		case err != nil:
			w.log.Warn("extend_error", "host", l.Item.Host, "err", err)
		default:
			l = nl
		}
	}
}

// fail hands a host whose result could not be written back to the queue.
func (w *loop) fail(bg context.Context, l queue.Lease, reason string) {
	w.untrack(l.ID)
	w.m.failed.Inc()
	err := w.q.Fail(bg, l, reason, w.maxAttempts)
	switch {
	case errors.Is(err, queue.ErrLeaseLost):
		w.log.Warn("lease_lost", "host", l.Item.Host, "during", "fail")
	case err != nil:
		w.log.Error("fail_error", "host", l.Item.Host, "err", err)
	case l.Item.Attempt+1 >= w.maxAttempts:
		w.m.dead.Inc()
		w.log.Error("item_dead", "host", l.Item.Host, "attempts", l.Item.Attempt+1, "reason", reason)
	default:
		w.log.Warn("host_failed", "host", l.Item.Host, "attempt", l.Item.Attempt+1, "reason", reason)
	}
}

// enqueue seeds the hosts a probe discovered, within --max-domains. Calls
// are serialised so that workers together stay within the bound (in a
// fleet each probe keeps it on its own view of the seen count). On error
// the host is not acked: it is failed and probed again, or the run stops.
func (w *loop) enqueue(bg context.Context, hosts []string) error {
	w.enqMu.Lock()
	defer w.enqMu.Unlock()
	room := w.maxDomains - w.seen.Load()
	if room <= 0 {
		return nil
	}
	if int64(len(hosts)) > room {
		hosts = hosts[:room]
	}
	res, err := w.q.Seed(bg, hosts)
	if err != nil {
		return err
	}
	w.seen.Add(int64(res.Added))
	w.m.discovered.Add(float64(res.Added))
	return nil
}

// releaseRest hands every lease still held back to pending in one step.
func (w *loop) releaseRest(bg context.Context, signalled bool) error {
	w.mu.Lock()
	rest := make([]queue.Lease, 0, len(w.inflight))
	for _, l := range w.inflight {
		rest = append(rest, l)
	}
	w.inflight = map[string]queue.Lease{}
	w.mu.Unlock()
	if len(rest) == 0 {
		if signalled {
			w.log.Info("shutdown_cleanup", "returned", 0, "hosts", []string{})
		}
		return nil
	}
	n, err := w.q.Release(bg, rest)
	w.log.Info("shutdown_cleanup", "returned", n, "hosts", hostList(rest), "not_held", len(rest)-n)
	if err != nil {
		return err
	}
	return nil
}

func hostList(ls []queue.Lease) []string {
	hs := make([]string, 0, min(len(ls), maxLoggedHost))
	for i, l := range ls {
		if i == maxLoggedHost {
			hs = append(hs, "…")
			break
		}
		hs = append(hs, l.Item.Host)
	}
	return hs
}

func clipHosts(hs []string) []string {
	if len(hs) > maxLoggedHost {
		return append(hs[:maxLoggedHost:maxLoggedHost], "…")
	}
	return hs
}

// reclaimLoop returns expired leases (of crashed workers) to pending now
// and then every reclaimEvery, and checks that the queue kept its state.
func (w *loop) reclaimLoop(ctx context.Context) {
	t := time.NewTicker(w.reclaimEvery)
	defer t.Stop()
	var seen int64
	for {
		seen = w.checkState(ctx, seen)
		res, err := w.q.Reclaim(ctx, w.leaseTTL, w.maxAttempts)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			w.log.Warn("reclaim_error", "err", err)
		default:
			if n := len(res.Requeued) + len(res.Dead); n > 0 {
				w.m.reclaimed.Add(float64(n))
				w.log.Info("lease_reclaimed", "count", n, "requeued", len(res.Requeued), "hosts", clipHosts(res.Requeued))
			}
			for _, h := range res.Dead {
				w.m.dead.Inc()
				w.log.Error("item_dead", "host", h, "reason", "lease expired on its last attempt")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkState logs queue_state_lost when the queue's seen set is smaller than
// when last checked (seen): spyder never removes a seen host, so the backend
// lost its data, e.g. Redis restarted without persistence. The probe keeps
// going on what is left; the line tells the operator to restore a
// snapshot. It returns the size now (seen when the queue does not answer).
func (w *loop) checkState(ctx context.Context, seen int64) int64 {
	st, err := w.q.Stats(ctx)
	if err != nil {
		return seen
	}
	if st.Seen > w.seenMax.Load() { // only this loop stores it
		w.seenMax.Store(st.Seen)
	}
	if st.Seen < seen {
		w.log.Error("queue_state_lost", "seen_before", seen, "seen_now", st.Seen, "pending", st.Pending, "processing", st.Processing,
			"note", "the queue forgot hosts it had seen: Redis lost its data (restarted without persistence?); "+
				"restore the last `spyder queue export` snapshot with `spyder queue import` (README: When Redis loses its data)")
	}
	return st.Seen
}
