package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"spyder/crawl"
)

// emittedChunk bounds the members sent in one command, so a large batch
// does not make one huge request.
const emittedChunk = 5000

// Emitted is the seen set of the crawl's output shared by a fleet: one Redis
// set per run, {base}:emitted:{run}, whose members are the 16-byte hashes
// ([crawl.KeyHash]) of the nodes and edges emitted, so memory per key stays
// small however long the key. The sets have no expiry; delete a run's set
// when its output is no longer to be deduplicated. It is safe for
// concurrent use.
type Emitted struct {
	client redis.UniversalClient
	base   string
}

var _ crawl.Emitted = (*Emitted)(nil)

// NewEmitted returns the seen set under base (the queue's base key, so that
// a hash tag in it keeps the sets in the queue's cluster slot).
func NewEmitted(client redis.UniversalClient, base string) *Emitted {
	return &Emitted{client: client, base: base}
}

func (e *Emitted) key(run string) string { return e.base + ":emitted:" + run }

// Seen implements [crawl.Emitted].
func (e *Emitted) Seen(ctx context.Context, run string, keys []string) ([]bool, error) {
	out := make([]bool, 0, len(keys))
	for start := 0; start < len(keys); start += emittedChunk {
		chunk := keys[start:min(len(keys), start+emittedChunk)]
		got, err := e.client.SMIsMember(ctx, e.key(run), hashes(chunk)...).Result()
		if err != nil {
			return nil, fmt.Errorf("emitted seen: %w", err)
		}
		out = append(out, got...)
	}
	return out, nil
}

// Mark implements [crawl.Emitted].
func (e *Emitted) Mark(ctx context.Context, run string, keys []string) error {
	for start := 0; start < len(keys); start += emittedChunk {
		chunk := keys[start:min(len(keys), start+emittedChunk)]
		if err := e.client.SAdd(ctx, e.key(run), hashes(chunk)...).Err(); err != nil {
			return fmt.Errorf("emitted mark: %w", err)
		}
	}
	return nil
}

func hashes(keys []string) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		h := crawl.KeyHash(k)
		out[i] = h[:]
	}
	return out
}
