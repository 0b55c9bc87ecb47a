package redisstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store"
)

var _ store.Backend = (*Store)(nil)

// pingTimeout bounds Connect's check that the server answers.
const pingTimeout = 3 * time.Second

var silenceOnce sync.Once

// quiet drops go-redis's own log lines (one per failed dial): spyder
// reports Redis trouble itself, in one line.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// Connect opens the queue under o.Key at addr (see [NewClient] for its
// forms), after checking within a few seconds that the server answers. The
// store owns the client it made and closes it in Close. Errors name the
// server, with any password redacted.
func Connect(ctx context.Context, addr string, o Options) (*Store, error) {
	silenceOnce.Do(func() { redis.SetLogger(quiet{}) })
	c, err := NewClient(addr)
	if err != nil {
		return nil, err
	}
	name := "redis " + redact(addr)
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s does not answer: %w", name, err)
	}
	s, err := Open(ctx, c, o)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.name = name + " key " + s.base
	s.ownsClient = true
	return s, nil
}

// Emitted returns a new owner of the output seen set under the queue's key
// (see [Emitted]: give each writer its own). It implements [store.Backend].
func (s *Store) Emitted() (store.Emitted, error) {
	return NewEmitted(s.c, s.base), nil
}

// Spool returns the spool under the queue's key, which every probe of the
// fleet shares. It implements [store.Backend].
func (s *Store) Spool() (store.Spool, error) {
	return NewSpool(s.c, s.base), nil
}
