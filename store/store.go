// Package store bundles what a backend of spyder implements as a
// [Backend]: the work queue (whose contract, [queue.Queue], is package
// queue's), and the contracts kept here: the output's seen set
// ([Emitted]), the spool of output batches an ingest endpoint has not taken
// yet ([Spool]), the probes' heartbeats ([Probes]), and the fleet's limiter
// (of the [limiter.Limiter] contract) that holds the per-host rate across
// processes (Backend.Limiters).
// store/boltstore (one bbolt file, standalone) and store/redisstore (one
// Redis shared by a fleet) implement it, and store/storetest is the one
// conformance suite both pass.
//
// Backends report a write their storage refused until someone acts (a full
// disk, a Redis over maxmemory) as [ErrWritesRefused], so that a caller can
// tell it from an error of one item without knowing which backend it holds.
package store

import (
	"context"
	"log/slog"

	"github.com/spyder-crawler/spyder/limiter"
	"github.com/spyder-crawler/spyder/queue"
)

// Backend is everything a crawl keeps in its store. The queue's methods are
// the backend's own; the seen set, the spool and the fleet limiter live in
// the same file or Redis, under the same name, and stay valid until Close.
type Backend interface {
	queue.Queue
	Probes

	// Emitted returns the output seen set kept beside the queue; the error
	// says what is wrong with the store where it keeps it.
	Emitted() (Emitted, error)

	// Spool returns the spool of undelivered output batches kept beside
	// the queue; the error says what is wrong with the store where it
	// keeps it.
	Spool() (Spool, error)

	// Limiters returns the limiter that holds rate requests a second (and
	// burst at once) to each key across every process of the backend. A
	// backend that one process holds alone returns local itself.
	Limiters(local *limiter.Local, rate float64, burst int, log *slog.Logger) limiter.Limiter

	// Shared reports whether other processes may lease from the queue at
	// the same time (a fleet), so a lease this process did not take may be
	// alive; when false, every lease in the queue at start was left by an
	// earlier run.
	Shared() bool

	// Name names the backend for messages: the file, or the Redis address
	// and key.
	Name() string
}

// Spool is a durable FIFO of output batches waiting for delivery. A batch
// Put is durable when Put returns; it stays until Remove, so a crash between
// delivery and Remove delivers it again (delivery is at-least-once).
type Spool interface {
	// Put appends data.
	Put(ctx context.Context, data []byte) error
	// Peek returns the oldest entry and its ID, or an empty ID when the
	// spool is empty. Entries the spool did not write are passed over.
	Peek(ctx context.Context) (id string, data []byte, err error)
	// Remove deletes the entry id; removing one already gone is no error.
	Remove(ctx context.Context, id string) error
	// Len reports how many entries the spool holds.
	Len(ctx context.Context) (int, error)
}
