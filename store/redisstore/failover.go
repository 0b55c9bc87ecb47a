package redisstore

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// reloadOnFailure makes a cluster client reload its map of the slots after
// a call fails as it does while a master is down or being replaced. go-redis
// follows MOVED and ASK itself and retries CLUSTERDOWN, TRYAGAIN and
// network errors with backoff, but it reloads the map only on a redirect or
// once a minute: without this, a client whose master died keeps dialling it
// long after a replica took over. The reload is lazy and coalesced (one at a
// time, at most every 200 ms), so a burst of failures costs one CLUSTER
// SLOTS; the caller's own retry (the probes retry every 2 s) then finds the
// new master.
type reloadOnFailure struct{ c *redis.ClusterClient }

func (h reloadOnFailure) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnFailure) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.after(ctx, err)
		return err
	}
}

func (h reloadOnFailure) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if err == nil {
				err = c.Err()
			}
		}
		h.after(ctx, err)
		return err
	}
}

func (h reloadOnFailure) after(ctx context.Context, err error) {
	if topologyChanging(err) {
		h.c.ReloadState(ctx)
	}
}

// topologyChanging reports whether err is what a call meets while the
// cluster moves a slot or replaces a master: the connection failed, or the
// node answered CLUSTERDOWN, TRYAGAIN, MASTERDOWN, LOADING or READONLY. A
// cancelled call, a missing key and a script's own error are not.
func topologyChanging(err error) bool {
	switch {
	case err == nil, errors.Is(err, redis.Nil), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case redis.IsClusterDownError(err), redis.IsTryAgainError(err), redis.IsMasterDownError(err),
		redis.IsLoadingError(err), redis.IsReadOnlyError(err):
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		return false // the server answered: an error of the call itself
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// failoverWait bounds how long a call of a [Sharded] on a cluster rides
// out a master being replaced: Redis Cluster fails over after its
// cluster-node-timeout (15 s by default) and a little more.
var failoverWait = 30 * time.Second

// rideOut calls fn and, on a cluster, calls it again while it fails as a
// call does while a master is being replaced ([topologyChanging]), backing
// off from 50 ms to 1 s, for up to failoverWait or until ctx ends. Calls
// to a shard whose master died then wait for its replica instead of
// failing their hosts. A call that failed on a broken connection may have
// run: the shards' calls are safe to repeat (a second ack of a lease
// reports it lost; seeding dedups).
func rideOut[T any](ctx context.Context, s *Sharded, fn func() (T, error)) (T, error) {
	v, err := fn()
	if !s.cluster {
		return v, err
	}
	deadline := time.Now().Add(failoverWait)
	backoff := 50 * time.Millisecond
	for err != nil && topologyChanging(err) && time.Now().Before(deadline) {
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
		v, err = fn()
	}
	return v, err
}
