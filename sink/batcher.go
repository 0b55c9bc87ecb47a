package sink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/store"
)

// BatcherConfig configures a [Batcher].
type BatcherConfig struct {
	ProbeID, RunID string
	// MaxResults is how many visit results a batch holds at most; 0 means
	// DefaultBatchResults.
	MaxResults int
	// MaxDelay is how long a result waits for its batch to fill before
	// the batch is written anyway; 0 means DefaultBatchDelay.
	MaxDelay time.Duration
	// Now stamps batches; nil means time.Now.
	Now func() time.Time
	// Hosts makes each batch carry every visited host's whole record
	// ([spyder.Batch.Hosts]), for the hosts output format.
	Hosts bool
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
// before acknowledging its host, so the delay adds to each visit's time;
// a quarter second keeps that small against a visit's own few hundred
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
	r   *spyder.Result
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
func (b *Batcher) Add(ctx context.Context, r *spyder.Result) error {
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
	results := make([]*spyder.Result, len(g))
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

// newBatchID returns a random 128-bit ID in hex.
func newBatchID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
