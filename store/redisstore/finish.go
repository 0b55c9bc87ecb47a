package redisstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/queue"
)

//go:embed finish.lua
var finishLua string

var finishScript = redis.NewScript(bucketsLua + finishLua)

// finish ends leases with the triples (lease member, "pending"|"dead", bytes) of
// finish.lua and reports, per triple, whether the lease was held.
func (s *Store) finish(ctx context.Context, op string, triples []any) ([]bool, error) {
	args := append([]any{s.finishSeq.Add(1)}, triples...)
	v, err := s.run(ctx, op, finishScript, []string{s.k.leases, s.k.pending, s.k.dead, s.replies, s.k.hostsMeta}, args...)
	if err != nil {
		return nil, err
	}
	reply, _ := v.([]any)
	if len(reply) != len(triples)/3 {
		return nil, fmt.Errorf("%s: %d replies for %d leases", op, len(reply), len(triples)/3)
	}
	out := make([]bool, len(reply))
	for i := range reply {
		out[i] = toInt64(reply[i]) == 1
	}
	return out, nil
}

// Fail implements [queue.Queue]. The item goes back to the end of the line
// with attempt+1, or to dead with reason when attempt+1 reaches maxAttempts
// (maxAttempts <= 0 means [queue.DefaultMaxAttempts]).
func (s *Store) Fail(ctx context.Context, l queue.Lease, reason string, maxAttempts int) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if l.ID == "" {
		return queue.ErrLeaseLost
	}
	where, payload := s.retryOrDead(l.Item, reason, maxAttempts)
	done, err := s.finish(ctx, "fail", []any{leaseMember(l), where, payload})
	if err != nil {
		return err
	}
	if !done[0] {
		return queue.ErrLeaseLost
	}
	return nil
}

// retryOrDead counts a failed attempt of it and returns where it goes next
// and the bytes to store there.
func (s *Store) retryOrDead(it queue.Item, reason string, maxAttempts int) (where string, payload []byte) {
	if maxAttempts <= 0 {
		maxAttempts = queue.DefaultMaxAttempts
	}
	it.Attempt++
	raw := it.Encode()
	if it.Attempt >= maxAttempts {
		return "dead", s.deadEntry(raw, &it, reason)
	}
	return "pending", raw
}

//go:embed release.lua
var releaseLua string

var releaseScript = redis.NewScript(releaseLua)

// Release implements [queue.Queue]: the items go back to the front of
// pending, unchanged, in their old order.
func (s *Store) Release(ctx context.Context, ls []queue.Lease) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	if len(ls) == 0 {
		return 0, nil
	}
	members := make([]any, len(ls))
	for i, l := range ls {
		members[i] = leaseMember(l)
	}
	v, err := s.run(ctx, "release", releaseScript, []string{s.k.leases, s.k.pending}, members...)
	if err != nil {
		return 0, err
	}
	return int(toInt64(v)), nil
}
