package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// Emitted is the seen set that makes each node and edge appear once per
// run. Keys are opaque strings; implementations may store their [KeyPrint].
//
// Deduplication is two steps so that nothing is lost: the writer asks which
// keys are new, writes the batch, and marks the keys only once the sink has
// the batch durably. A crash in between repeats those nodes and edges in a
// later batch (harmless, as the output is at-least-once) instead of marking
// them emitted while they never reached the sink.
//
// One writer writes one batch at a time, so within one process nothing can
// slip between a check and its mark. Between the probes of a fleet it can:
// a shared backend's Seen therefore also claims the keys it reports new
// until they are marked, and waits for another probe's claim instead of
// reporting its keys new too.
//
// Implementations are safe for concurrent use.
type Emitted interface {
	// Seen reports, for each of keys, whether it was marked for run.
	Seen(ctx context.Context, run string, keys []string) ([]bool, error)
	// Mark marks keys as emitted in run. Marking a key twice is harmless.
	Mark(ctx context.Context, run string, keys []string) error
}

// KeyHash returns the first 16 bytes of key's SHA-256: what seen sets
// stored before [KeyPrint], and what a bbolt run begun then goes on with.
func KeyHash(key string) [16]byte {
	s := sha256.Sum256([]byte(key))
	return [16]byte(s[:16])
}

// KeyPrint returns the first 8 bytes of key's SHA-256, big-endian: what
// seen sets store, so that each key costs 8 bytes whatever its length.
//
// Two keys of one run with the same print would make the second look
// emitted and drop it. With n keys in a run the odds that any two share a
// print are about n²/2^65: one in 370,000 at 10 million keys, one in
// 3,700 at 100 million, and 0.4% at 387 million (every key of a crawl of
// 387 million hosts, were every one a shared node). Only nodes and the
// edges several hosts' probes meet are keyed (a host's own edges are not),
// which keeps n well below the output's size.
func KeyPrint(key string) uint64 {
	s := sha256.Sum256([]byte(key))
	return binary.BigEndian.Uint64(s[:8])
}

// MemoryEmitted is an [Emitted] held in memory, for tests and one-process
// crawls with no store. It keeps an 8-byte print per key, so its memory grows
// with the output of the runs it has seen. Its zero value is ready to use.
type MemoryEmitted struct {
	mu   sync.Mutex
	runs map[string]map[uint64]struct{}
}

var _ Emitted = (*MemoryEmitted)(nil)

// Seen implements [Emitted].
func (m *MemoryEmitted) Seen(_ context.Context, run string, keys []string) ([]bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := m.runs[run]
	out := make([]bool, len(keys))
	for i, k := range keys {
		_, out[i] = set[KeyPrint(k)]
	}
	return out, nil
}

// Mark implements [Emitted].
func (m *MemoryEmitted) Mark(_ context.Context, run string, keys []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs == nil {
		m.runs = make(map[string]map[uint64]struct{})
	}
	set := m.runs[run]
	if set == nil {
		set = make(map[uint64]struct{})
		m.runs[run] = set
	}
	for _, k := range keys {
		set[KeyPrint(k)] = struct{}{}
	}
	return nil
}

// RunDropper is an [Emitted] that can forget a finished run: DropRun
// deletes run's seen set and reports how many keys it held. A writer still
// writing that run would then write again what it meets, so drop a run
// only once its crawl is over.
type RunDropper interface {
	DropRun(ctx context.Context, run string) (int64, error)
}

// DropRun implements [RunDropper].
func (m *MemoryEmitted) DropRun(_ context.Context, run string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.runs[run])
	delete(m.runs, run)
	return int64(n), nil
}
