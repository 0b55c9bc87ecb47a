package store

import (
	"context"
	"crypto/sha256"
	"sync"
)

// Emitted is the seen set that makes each node and edge appear once per
// run. Keys are opaque strings; implementations may store their [KeyHash].
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

// KeyHash returns the first 16 bytes of key's SHA-256: what seen sets store,
// so that each key costs the same small size whatever its length.
func KeyHash(key string) [16]byte {
	s := sha256.Sum256([]byte(key))
	return [16]byte(s[:16])
}

// MemoryEmitted is an [Emitted] held in memory, for tests and one-process
// crawls with no store. It keeps a 16-byte hash per key, so its memory grows
// with the output of the runs it has seen. Its zero value is ready to use.
type MemoryEmitted struct {
	mu   sync.Mutex
	runs map[string]map[[16]byte]struct{}
}

var _ Emitted = (*MemoryEmitted)(nil)

// Seen implements [Emitted].
func (m *MemoryEmitted) Seen(_ context.Context, run string, keys []string) ([]bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := m.runs[run]
	out := make([]bool, len(keys))
	for i, k := range keys {
		_, out[i] = set[KeyHash(k)]
	}
	return out, nil
}

// Mark implements [Emitted].
func (m *MemoryEmitted) Mark(_ context.Context, run string, keys []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs == nil {
		m.runs = make(map[string]map[[16]byte]struct{})
	}
	set := m.runs[run]
	if set == nil {
		set = make(map[[16]byte]struct{})
		m.runs[run] = set
	}
	for _, k := range keys {
		set[KeyHash(k)] = struct{}{}
	}
	return nil
}
