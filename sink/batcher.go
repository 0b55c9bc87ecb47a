package sink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/store"
)

// BatcherConfig configures a [Batcher].
type BatcherConfig struct {
	ProbeID, RunID string
	// MaxResults is how many probe results a batch holds at most; 0 means
	// DefaultBatchResults.
	MaxResults int
	// MaxDelay is how long a result waits for its batch to fill before
	// the batch is written anyway; 0 means DefaultBatchDelay.
	MaxDelay time.Duration
	// Now stamps batches; nil means time.Now.
	Now func() time.Time
	// Queue tells which edge targets the queue holds to be probed, whose
	// nodes their own probes write; nil: none is, and every edge target
	// gets a bare node when first met.
	Queue Queued
}

// Queued is the part of the queue the batcher asks; every store backend
// has it.
type Queued interface {
	Queued(ctx context.Context, hosts []host.Name) ([]bool, error)
}

// Batch defaults. A worker waits for its result's batch to be written
// before acknowledging its host, so the delay adds to each probe's time;
// a quarter second keeps that small against a probe's own few hundred
// milliseconds, while a batch of 100 results keeps lines a few hundred
// kilobytes at most.
const (
	DefaultBatchResults = 100
	DefaultBatchDelay   = 250 * time.Millisecond
)

// ErrBatcherClosed is returned by [Batcher.Add] after Close.
var ErrBatcherClosed = errors.New("batcher closed")

// Batcher groups results into batches by size and time, removes nodes and
// edges already emitted in the run, and writes the batches to a sink one
// at a time, in order. It is safe for concurrent use by every worker.
type Batcher struct {
	sink Sink
	seen store.Emitted
	cfg  BatcherConfig

	in     chan pending
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
}

// pending is a result waiting for its batch; err receives the batch's
// outcome.
type pending struct {
	r   *crawl.Result
	err chan error
}

// NewBatcher returns a Batcher writing to sink, deduplicating through seen.
// It runs a goroutine until [Batcher.Close].
func NewBatcher(sink Sink, seen store.Emitted, cfg BatcherConfig) *Batcher {
	if cfg.MaxResults <= 0 {
		cfg.MaxResults = DefaultBatchResults
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = DefaultBatchDelay
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := &Batcher{
		sink: sink, seen: seen, cfg: cfg,
		in:   make(chan pending),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go b.loop()
	return b
}

// Add queues r for the next batch and returns once that batch was written
// to the sink (nil) or failed (the sink's or seen set's error). If ctx ends
// first, Add returns ctx.Err(); r may still be written later.
func (b *Batcher) Add(ctx context.Context, r *crawl.Result) error {
	p := pending{r: r, err: make(chan error, 1)}
	select {
	case b.in <- p:
	case <-b.stop:
		return ErrBatcherClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-p.err:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is waiting and stops the batcher. It returns ctx.Err()
// if ctx ends first (the last batch then fails with it).
func (b *Batcher) Close(ctx context.Context) error {
	b.closed.Do(func() { close(b.stop) })
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop collects results and hands full (or old enough) groups to a writer
// goroutine, so that collecting goes on while a batch is written.
func (b *Batcher) loop() {
	groups := make(chan []pending, 1)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for g := range groups {
			err := b.write(g)
			for _, p := range g {
				p.err <- err
			}
		}
	}()
	defer func() {
		close(groups)
		<-writerDone
		close(b.done)
	}()

	var cur []pending
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		if len(cur) > 0 {
			groups <- cur
			cur = nil
		}
		timer.Stop()
	}
	for {
		select {
		case p := <-b.in:
			cur = append(cur, p)
			if len(cur) == 1 {
				timer.Reset(b.cfg.MaxDelay)
			}
			if len(cur) >= b.cfg.MaxResults {
				flush()
			}
		case <-timer.C:
			flush()
		case <-b.stop:
			// Take whatever Add calls already handed over, then stop.
		drain:
			for {
				select {
				case p := <-b.in:
					cur = append(cur, p)
				default:
					break drain
				}
			}
			flush()
			return
		}
	}
}

// write builds the batch of one group, writes it and marks what it held.
func (b *Batcher) write(g []pending) error {
	ctx := context.Background()
	results := make([]*crawl.Result, len(g))
	for i, p := range g {
		results[i] = p.r
	}
	batch, keys, err := b.build(ctx, results)
	if err != nil {
		return err
	}
	if err := b.sink.WriteBatch(ctx, batch); err != nil {
		return err
	}
	if len(keys) > 0 {
		if err := b.seen.Mark(ctx, b.cfg.RunID, keys); err != nil {
			return fmt.Errorf("mark emitted: %w", err)
		}
	}
	return nil
}

// Seen-set key prefixes: one namespace per kind of record. A domain node
// has one key whether a probe or an edge brought it, so it is written once
// per run.
const (
	keyDomain = "d\x00"
	keyIP     = "i\x00"
	keyCert   = "c\x00"
	keyEdge   = "e\x00"
)

// entry is one node or edge of a batch being built: its seen-set key and
// how to add it to the batch.
type entry struct {
	key string
	add func()
}

// build returns the batch of results' new nodes and edges (and every
// result's outcome), with the keys to mark once it is written.
//
// Only what several hosts' probes may both meet goes through the run's seen
// set: domain, IP and certificate nodes, and the edges whose source is not
// the probed host (an IP's IN_AS, a redirect hop's REDIRECTS_TO). An edge
// from the probed host itself is written by that host's probe alone, as
// the queue leases each host to one probe at a time and a done host is not
// probed again in the same run unless it is queued again; keeping it out
// of the seen set is most of what the set would otherwise hold. The price:
// a host probed twice in one run (its lease expired after its batch was
// written and before its ack, or it was queued again by hand, by queue
// retry or by --revisit under the same --run) writes its own edges again.
//
// A probed host's node comes from its own probe, even when the probe found
// nothing (an NXDOMAIN host still gets its node, for the edges that point
// at it). A host that appears only as another host's edge target gets a
// bare node, unless the queue holds it to be probed: then its own probe
// writes its node later, with what it learns, and the node is not written
// twice.
func (b *Batcher) build(ctx context.Context, results []*crawl.Result) (*crawl.Batch, []string, error) {
	batch := &crawl.Batch{
		ProbeID: b.cfg.ProbeID, RunID: b.cfg.RunID, BatchID: newBatchID(),
		Timestamp:   b.cfg.Now().Unix(),
		NodesDomain: []crawl.DomainNode{}, NodesIP: []crawl.IPNode{}, NodesCert: []crawl.CertNode{}, Edges: []crawl.Edge{},
	}
	var items []entry
	inBatch := make(map[string]bool)
	add := func(key string, f func()) {
		if !inBatch[key] {
			inBatch[key] = true
			items = append(items, entry{key, f})
		}
	}
	// Probed hosts' nodes first, so that a bare node of the same host in
	// this batch is left out.
	for _, r := range results {
		batch.Probes = append(batch.Probes, r.Outcome)
		if d, ok := ownNode(r, batch.Timestamp); ok {
			add(keyDomain+d.Host, func() { batch.NodesDomain = append(batch.NodesDomain, d) })
		}
	}
	var bare []crawl.DomainNode
	for _, r := range results {
		for _, d := range r.Domains {
			if d.Host != r.Host && !inBatch[keyDomain+d.Host] {
				inBatch[keyDomain+d.Host] = true
				bare = append(bare, d)
			}
		}
		for _, n := range r.IPs {
			add(keyIP+n.IP, func() { batch.NodesIP = append(batch.NodesIP, n) })
		}
		for _, c := range r.Certs {
			add(keyCert+c.SPKISHA256, func() { batch.NodesCert = append(batch.NodesCert, c) })
		}
		for _, e := range r.Edges {
			k := keyEdge + e.Type + "\x00" + e.Source + "\x00" + e.Target
			if e.Source != r.Host {
				add(k, func() { batch.Edges = append(batch.Edges, e) })
			} else if !inBatch[k] {
				// The host's own edge: only its probe writes it, and the
				// queue leases a host to one probe at a time, so it needs
				// no seen-set key (see build's doc).
				inBatch[k] = true
				batch.Edges = append(batch.Edges, e)
			}
		}
	}
	bare, err := b.unqueued(ctx, bare)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range bare {
		items = append(items, entry{keyDomain + d.Host, func() { batch.NodesDomain = append(batch.NodesDomain, d) }})
	}
	fresh, err := b.fresh(ctx, items)
	if err != nil {
		return nil, nil, err
	}
	return batch, fresh, nil
}

// ownNode returns the node of the probed host of r, or a node with only
// its name when the probe found nothing to fill one (stamped ts).
func ownNode(r *crawl.Result, ts int64) (crawl.DomainNode, bool) {
	for _, d := range r.Domains {
		if d.Host == r.Host {
			return d, true
		}
	}
	if _, err := host.Parse(r.Host); err != nil || r.Host == "" {
		return crawl.DomainNode{}, false
	}
	return crawl.DomainNode{Host: r.Host, Apex: crawl.Apex(r.Host), FirstSeen: ts, LastSeen: ts}, true
}

// unqueued returns the nodes of ds whose hosts the queue does not hold to
// be probed (all of them without a queue).
func (b *Batcher) unqueued(ctx context.Context, ds []crawl.DomainNode) ([]crawl.DomainNode, error) {
	if b.cfg.Queue == nil || len(ds) == 0 {
		return ds, nil
	}
	hs := make([]host.Name, len(ds))
	for i, d := range ds {
		hs[i] = host.Name(d.Host)
	}
	queued, err := b.cfg.Queue.Queued(ctx, hs)
	if err != nil {
		return nil, fmt.Errorf("check queued hosts: %w", err)
	}
	if len(queued) != len(ds) {
		return nil, fmt.Errorf("check queued hosts: %d answers for %d hosts", len(queued), len(ds))
	}
	out := ds[:0]
	for i, d := range ds {
		if !queued[i] {
			out = append(out, d)
		}
	}
	return out, nil
}

// fresh adds to the batch the items not yet emitted in the run and returns
// their keys.
func (b *Batcher) fresh(ctx context.Context, items []entry) ([]string, error) {
	if len(items) == 0 {
		return nil, nil
	}
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.key
	}
	seen, err := b.seen.Seen(ctx, b.cfg.RunID, keys)
	if err != nil {
		return nil, fmt.Errorf("check emitted: %w", err)
	}
	if len(seen) != len(keys) {
		return nil, fmt.Errorf("check emitted: %d answers for %d keys", len(seen), len(keys))
	}
	var fresh []string
	for i, it := range items {
		if !seen[i] {
			it.add()
			fresh = append(fresh, it.key)
		}
	}
	return fresh, nil
}

// newBatchID returns a random 128-bit ID in hex.
func newBatchID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
