package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Redis replicates asynchronously: a write the master answered may not
// have reached its replica when the master dies, and a failover then
// loses it. For a seed that loss is a host never probed, so [Options]
// SeedWait makes each seed write wait (WAIT 1) until a replica has it.

// runWaited runs a script like [Store.run], then waits up to s.seedWait
// for one replica to confirm it: WAIT counts the writes of its own
// connection, so both run on one connection of the master of keys[0]. A
// WAIT that times out (no replica, or one too far behind) is not an
// error: the write is on the master, as without the option. It rides out
// a failover as the store's client does (see [failoverHook]), running the
// script again on the new master when the old one died before WAIT
// answered (the seed script adds only hosts not yet seen, so a host is
// never queued twice, though one the first run added may be counted as a
// duplicate). A client other than [redis.Client] or [redis.ClusterClient]
// runs the script without waiting.
func (s *Store) runWaited(ctx context.Context, op string, sc *redis.Script, keys []string, args ...any) (any, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	h := &failoverHook{reload: func(context.Context) {}, wait: FailoverWait}
	var master func(context.Context) (*redis.Client, error)
	switch c := s.c.(type) {
	case *redis.Client:
		master = func(context.Context) (*redis.Client, error) { return c, nil }
	case *redis.ClusterClient:
		h.reload = c.ReloadState
		master = func(ctx context.Context) (*redis.Client, error) { return c.MasterForKey(ctx, keys[0]) }
	default:
		return s.run(ctx, op, sc, keys, args...)
	}
	var v any
	err := h.retry(ctx, func() (bool, error) {
		m, err := master(ctx)
		if err != nil {
			return Transient(err), err
		}
		conn := m.Conn()
		defer conn.Close()
		if v, err = sc.Run(ctx, conn, keys, args...).Result(); err != nil {
			return Transient(err), err
		}
		err = conn.Wait(ctx, 1, s.seedWait).Err()
		return Transient(err), err
	})
	if err != nil {
		return nil, s.interpret(ctx, op, err)
	}
	return v, nil
}

// seedRun is the Seed write: [Store.runWaited] when Options.SeedWait is
// set, else [Store.run].
func (s *Store) seedRun(ctx context.Context, keys []string, args ...any) (any, error) {
	if s.seedWait > 0 {
		return s.runWaited(ctx, "seed", seedScript, keys, args...)
	}
	return s.run(ctx, "seed", seedScript, keys, args...)
}
