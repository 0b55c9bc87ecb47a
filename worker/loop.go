// Package worker is the run loop a crawl probe runs: it leases hosts from
// the queue, probes each, hands the result to the output and acknowledges
// the host once its result is durable. Around that it keeps leases alive
// (heartbeats), acks finished hosts in batches, reclaims the leases of
// workers that died, notices a queue that lost its state, stops the whole
// run when the store refuses writes, and on shutdown hands back in one step
// what it did not finish.
package worker

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/concurrency"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/metrics"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

// Visitor probes one host; *crawl.Crawler is the one in use.
type Visitor interface {
	Visit(ctx context.Context, h host.Name) *spyder.Result
}

// Writer hands a result to the output and returns once it is durable;
// *sink.Batcher is the one in use.
type Writer interface {
	Add(ctx context.Context, r *spyder.Result) error
}

// Loop limits.
const (
	maxLeaseBatch = 256             // items asked for in one Lease call
	maxAckBatch   = 256             // leases acked in one AckAll call
	leaseWait     = time.Second     // how long Lease waits on an empty queue
	leaseRetry    = 2 * time.Second // pause after a failed Lease
	maxLoggedHost = 100             // hosts listed in one log line
)

// DefaultStateEvery is how often a loop checks that the queue kept its
// state, unless Config.StateEvery says otherwise: often, so that a loss
// shows in the log and on /healthz within seconds, and cheap (one Stats).
const DefaultStateEvery = time.Second

// Config is how a Loop works.
type Config struct {
	Concurrency   int           // hosts leased and not yet acked, at most, when Limit is nil
	LeaseTTL      time.Duration // a lease not extended expires after this
	MaxAttempts   int           // failures before a host goes to dead
	Grace         time.Duration // time in-flight probes get on shutdown
	ExitWhenEmpty bool          // return once nothing is pending or in flight
	ReclaimEvery  time.Duration // how often expired leases are reclaimed
	StateEvery    time.Duration // how often the queue's state is checked; 0: DefaultStateEvery

	// Continuous queues discovered hosts while the queue has seen fewer
	// than MaxDomains.
	Continuous bool
	MaxDomains int64

	// Check, when set, guards the run against a network of its own that
	// fails: probes that failed as if the resolver or the network were
	// down are held back until another probe succeeds or Check passes; if
	// Check fails, the run halts and hands those hosts back unprobed.
	Check Checker

	// Held, when set, keeps the writes the queue does not take (discovered
	// hosts, acks with their probe records) on the probe's own disk, to be
	// replayed in order once the queue answers, first thing at the next
	// start if the run ends before; nil: such writes are retried while the
	// leases last, then given up (the hosts are probed again).
	Held store.Spool

	// Limit, when set, is how many hosts may be leased and not yet acked,
	// adapted as the run goes (see package concurrency); nil: Concurrency,
	// fixed. A visit that timed out while the process was saturated is
	// handed back to the queue without spending an attempt.
	Limit *concurrency.Limit
}

// env is what the loop's services share: the queue, the prober, the
// output, the log, the counters and the configuration, and the tallies
// they keep together. Services hold a pointer to the one env, so that a
// test that swaps a part of the loop swaps it for all of them.
type env struct {
	q       queue.Work
	visitor Visitor
	out     Writer
	log     *slog.Logger
	m       *metrics.Set
	cfg     Config

	seen atomic.Int64 // hosts in the seen set, as last known
	done atomic.Int64 // hosts acked by this process
	// seenMax is the largest seen set the state watch saw; a smaller one
	// later means the queue lost its state.
	seenMax atomic.Int64
	lost    atomic.Bool // the queue lost its state during this run
}

// Loop leases hosts from the queue and probes them,
// as many at once as its concurrency limit allows (Config.Limit, else a
// fixed Concurrency), until the queue is empty (ExitWhenEmpty) or its ctx
// is cancelled. Its counters are safe to read while it runs.
//
// The loop itself leases and visits; beside it run a few services, each
// with one context: the acker (acks finished hosts in batches), the spool
// (writes the queue did not take, replayed in order), the reclaimer
// (expired leases of dead probes), the state watch (a queue that lost its
// state), and the link (whether the queue answers, waking heartbeats and
// the replay when it answers again).
type Loop struct {
	*env
	link    *link
	spool   *spool
	acker   *acker
	reclaim *reclaimer
	watch   *stateWatch

	lim      atomic.Pointer[concurrency.Limit] // Config.Limit or a fixed one; set by Run
	limMu    sync.Mutex
	limCause string // the cause of the limit's last move, as logged
	overMu   sync.Mutex
	overload map[host.Name]int // times a host was handed back for overload

	enqMu    sync.Mutex // serialises enqueue
	mu       sync.Mutex
	inflight map[string]queue.Lease // by lease ID: leased, not yet acked or failed

	// halt ends the run with an error no retry of a host can fix; set by
	// Run.
	halt context.CancelCauseFunc
	// guard holds back probes that failed as if the network were down;
	// nil without Config.Check. Set by Run.
	guard *guard
}

// New returns a Loop over q that probes with p, writes to out, logs to log
// and counts into m.
func New(q queue.Work, p Visitor, out Writer, log *slog.Logger, m *metrics.Set, cfg Config) *Loop {
	e := &env{q: q, visitor: p, out: out, log: log, m: m, cfg: cfg}
	w := &Loop{env: e, inflight: map[string]queue.Lease{}, overload: map[host.Name]int{}}
	w.link = newLink(e, w.Inflight)
	w.spool = newSpool(e, w.link)
	w.acker = &acker{env: e, link: w.link, spool: w.spool, untrack: w.untrack}
	w.reclaim = &reclaimer{env: e, link: w.link}
	w.watch = &stateWatch{env: e, link: w.link}
	return w
}

// Holding reports whether writes are held for the queue.
func (w *Loop) Holding() bool { return w.spool.isHolding() }

// Done reports how many hosts this loop acknowledged.
func (w *Loop) Done() int64 { return w.done.Load() }

// NoteSeen tells the loop the queue's seen set holds n hosts (from a
// Stats poll), so --max-domains counts hosts other probes queued too.
func (w *Loop) NoteSeen(n int64) {
	for {
		cur := w.seen.Load()
		if n <= cur || w.seen.CompareAndSwap(cur, n) {
			return
		}
	}
}

// StateLost reports whether the queue lost its state (its seen set shrank)
// while this loop ran: the crawl needs an operator to restore a snapshot.
func (w *Loop) StateLost() bool { return w.lost.Load() }

// Inflight reports how many hosts are leased and not yet acked or failed.
func (w *Loop) Inflight() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.inflight)
}

func (w *Loop) untrack(id string) {
	w.mu.Lock()
	delete(w.inflight, id)
	w.mu.Unlock()
}

func (w *Loop) track(ls []queue.Lease) {
	w.mu.Lock()
	for _, l := range ls {
		w.inflight[l.ID] = l
	}
	w.mu.Unlock()
}

// hostList names the hosts of ls for a log line, at most maxLoggedHost.
func hostList(ls []queue.Lease) []string {
	hs := make([]string, 0, min(len(ls), maxLoggedHost))
	for i, l := range ls {
		if i == maxLoggedHost {
			hs = append(hs, "…")
			break
		}
		hs = append(hs, string(l.Item.Host))
	}
	return hs
}

// clipHosts cuts hs to maxLoggedHost for a log line.
func clipHosts(hs []string) []string {
	if len(hs) > maxLoggedHost {
		return append(hs[:maxLoggedHost:maxLoggedHost], "…")
	}
	return hs
}
