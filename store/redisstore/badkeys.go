package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// interpret is interpret for the store's own calls: when Redis refused one
// because a key holds what spyder never writes there (another program used
// the name, or a hand edit), the error names the key and what is wrong
// instead of only Redis's "WRONGTYPE Operation against a key holding the
// wrong kind of value". The scripts check the keys they write before their
// first write, so such a call has changed nothing.
func (s *Store) interpret(ctx context.Context, op string, err error) error {
	var re redis.Error
	if !errors.As(err, &re) {
		return interpret(op, err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "WRONGTYPE") && !strings.Contains(msg, "not an integer") {
		return interpret(op, err)
	}
	bad := s.badKeys(context.WithoutCancel(ctx))
	if bad == "" {
		return interpret(op, err)
	}
	return fmt.Errorf("%s: %s (another program wrote it? move it aside with RENAME and the queue goes on): %w", op, bad, err)
}

// badKeys describes the queue keys that hold what spyder does not keep
// there, or "" when all look right (or Redis cannot be asked).
func (s *Store) badKeys(ctx context.Context) string {
	want := []struct{ key, typ string }{
		{s.k.pending, "list"}, {s.k.legacy, "list"}, {s.k.dead, "list"}, {s.k.hostsMeta, "hash"},
		{s.k.leases, "zset"}, {s.k.leaseSeq, "string"}, {s.k.legacySeen, "hash"}, {s.k.hosts + "#long", "hash"},
	}
	pipe := s.c.Pipeline()
	types := make([]*redis.StatusCmd, len(want))
	for i, w := range want {
		types[i] = pipe.Type(ctx, w.key)
	}
	seq := pipe.Get(ctx, s.k.leaseSeq)
	_, _ = pipe.Exec(ctx) // each command keeps its own error
	var bad []string
	for i, w := range want {
		if t, err := types[i].Result(); err == nil && t != "none" && t != w.typ {
			bad = append(bad, fmt.Sprintf("key %s is a %s, spyder keeps a %s there", w.key, t, w.typ))
		}
	}
	if v, err := seq.Result(); err == nil {
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			bad = append(bad, fmt.Sprintf("key %s holds %s, not an integer (the lease ID counter)", s.k.leaseSeq, clip([]byte(v))))
		}
	}
	return strings.Join(bad, "; ")
}
