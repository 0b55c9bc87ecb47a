package main

import (
	"context"
	"errors"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spyder-crawler/spyder/dashboard"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

// inspector is what `queue stats` and `queue dead list|retry` need: a
// store.Backend, or a running standalone crawl reached over its control
// socket.
type inspector interface {
	dashboard.Queue
	Name() string
}

// withInspector runs action on the running crawl that holds --db, asked
// over its control socket, or else on the store the flags name, opened
// for it (see withBackend).
func withInspector(action func(c *cli.Context, q inspector) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		db := c.String("db")
		if strings.TrimSpace(c.String("redis")) == "" && db != "" {
			if cl, ok := dashboard.DialSocket(dashboard.SocketPath(db)); ok {
				return action(c, remote{cl: cl, db: db})
			}
		}
		return withBackend(true, func(c *cli.Context, b store.Backend) error { return action(c, b) })(c)
	}
}

// remote is a running crawl's queue, asked over its control socket.
type remote struct {
	cl *dashboard.Client
	db string
}

func (r remote) Name() string { return r.db + " (via the running spyder, " + r.cl.Path() + ")" }

func (r remote) Stats(ctx context.Context) (queue.Stats, error) {
	st, err := r.cl.Status(ctx)
	return st.Stats.Queue(), err
}

func (r remote) Probes(ctx context.Context) ([]store.ProbeBeat, error) {
	st, err := r.cl.Status(ctx)
	if err == nil && st.ProbesError != "" {
		err = errors.New(st.ProbesError)
	}
	return st.Probes, err
}

func (r remote) RetryDead(ctx context.Context, limit int) (int, error) {
	return r.cl.RetryDead(ctx, limit)
}

// Dead returns the dead items; the item of one that decoded carries its
// host and attempt (the fields the listing prints), and Raw its bytes.
func (r remote) Dead(ctx context.Context, limit int) ([]queue.DeadItem, error) {
	items, err := r.cl.Dead(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]queue.DeadItem, len(items))
	for i, d := range items {
		out[i] = queue.DeadItem{Raw: []byte(d.Raw), Error: d.Error, At: d.At}
		if d.Host != "" {
			out[i].Item = &queue.Item{Host: host.Name(d.Host), Attempt: d.Attempts}
		}
	}
	return out, nil
}
