package redisstore

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// FailoverWait is how long a command to a Redis Cluster keeps being retried
// while the cluster cannot serve it (see [Transient]): longer than a
// failover takes under Redis's default cluster-node-timeout of 15 s (the
// node timeout, then a replica's election), so that callers see a failover
// as a slow command, not an error.
const FailoverWait = 30 * time.Second

// Failover backoff: the first retry comes soon (a redirect or a reload of
// the slot map often fixes it at once), later ones at most once a second,
// so that an outage costs each waiting command about one try a second.
const (
	failoverFirstBackoff = 50 * time.Millisecond
	failoverMaxBackoff   = time.Second
)

// newClusterClient returns a client of the cluster o names that rides out
// a failover: see [failoverHook].
func newClusterClient(o *redis.ClusterOptions) *redis.ClusterClient {
	cc := redis.NewClusterClient(o)
	cc.AddHook(&failoverHook{reload: cc.ReloadState, wait: FailoverWait})
	return cc
}

// Transient reports whether err is a Redis Cluster that cannot serve a
// command for a while, as during a failover: the cluster is down
// (CLUSTERDOWN, until a replica takes over the slots of a dead master),
// the slot is being moved (TRYAGAIN, or MOVED/ASK left after the client
// ran out of redirects), a master lost its link to its own master
// (MASTERDOWN) or is loading its data (LOADING), or the node the client
// knows for the slot is gone (a refused or reset connection). Trying again
// after the cluster settles serves it; nothing about the command is wrong.
// Errors of the context are never transient.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	for _, code := range []string{"CLUSTERDOWN ", "TRYAGAIN ", "MASTERDOWN ", "LOADING ", "MOVED ", "ASK "} {
		if redis.HasErrorPrefix(err, code) {
			return true
		}
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// failoverHook retries a command, or a pipeline, that failed with a
// [Transient] error, with a backoff, until it is served, the command's
// context ends or wait has passed since its first try; then the last error
// is returned. Before each retry it asks for the slot map to be reloaded
// (reload), since go-redis reloads it on a redirect but not when the
// master it knows for a slot refuses connections: without that it would
// keep dialing a dead master until its periodic reload.
//
// A retry after a reset connection may run a command the server had run
// already; go-redis makes such retries itself too, and the scripts that
// must not run twice keep their outcome under a token (see the package
// doc). A script the new master does not know (NOSCRIPT, its script cache
// is not replicated) is loaded again by [redis.Script.Run].
type failoverHook struct {
	reload func(context.Context)
	wait   time.Duration
}

func (h *failoverHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failoverHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.retry(ctx, func() (bool, error) {
			err := next(ctx, cmd)
			if err == nil {
				err = cmd.Err() // commands run on every shard report here
			}
			return Transient(err), err
		})
	}
}

func (h *failoverHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.retry(ctx, func() (bool, error) {
			err := next(ctx, cmds)
			for _, c := range cmds {
				if name := c.Name(); name == "multi" || name == "exec" {
					continue // a transaction's wrappers: go-redis sets no error on them
				}
				if !Transient(c.Err()) {
					return false, err // some command was served, or failed for itself: not all again
				}
			}
			return Transient(err), err
		})
	}
}

// retry calls try until it says its error is not worth another try, ctx
// ends or h.wait has passed.
func (h *failoverHook) retry(ctx context.Context, try func() (bool, error)) error {
	start := time.Now()
	backoff := failoverFirstBackoff
	for {
		again, err := try()
		if !again || ctx.Err() != nil || time.Since(start)+backoff > h.wait {
			return err
		}
		h.reload(ctx)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, failoverMaxBackoff)
	}
}
