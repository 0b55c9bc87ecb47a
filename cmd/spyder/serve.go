package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spyder-crawler/spyder/dashboard"
	"github.com/spyder-crawler/spyder/store"
)

// Heartbeats: a probe reports itself every beatEvery, and fades from the
// list beatTTL after its last beat.
const (
	beatEvery = 2 * time.Second
	beatTTL   = 10 * time.Second
)

// serve starts what lets people watch the run: the dashboard, /metrics and
// /healthz on --metrics-addr, and standalone the control socket beside
// the bbolt file, which `spyder queue stats` and `dead` use while the run
// holds the file. A control socket that cannot be made is logged and the
// run goes on without it.
func (r *running) serve(ctx context.Context, cfg runConfig) error {
	r.board = dashboard.New(r.q, r.q.Name(), r.q.Shared(), time.Now(), func() dashboard.Process {
		lim := r.loop.Limit()
		return dashboard.Process{Done: r.loop.Done(), Inflight: r.loop.Inflight(), Outcomes: r.m.Outcomes(),
			Limit: lim.Limit, LimitWhy: lim.Why.String(), Requeued: lim.Overload}
	})
	if !r.q.Shared() && cfg.db != "" {
		path := dashboard.SocketPath(cfg.db)
		stop, err := dashboard.ServeSocket(path, r.board.Handler(), r.log)
		if err != nil {
			r.log.Warn("control_socket", "err", err, "note", "`spyder queue stats` cannot reach this run")
		} else {
			r.closes = append(r.closes, func() error { stop(); return nil })
		}
	}
	if cfg.metricsAddr == "" {
		return nil
	}
	stop, err := r.m.Serve(ctx, cfg.metricsAddr, r.health, r.board.Handler(), r.log)
	if err != nil {
		return usagef("--metrics-addr %s: %v", cfg.metricsAddr, err)
	}
	r.closes = append(r.closes, func() error { stop(); return nil })
	return nil
}

// health is /healthz: an error once the queue lost its state during the
// run (it stays so until the probe restarts, after an operator restored a
// snapshot), or while the queue does not answer.
func (r *running) health(ctx context.Context) error {
	if r.loop.StateLost() {
		return errors.New("the queue lost its state (queue_state_lost): restore a snapshot with `spyder queue import` and restart this probe")
	}
	if _, err := r.q.Stats(ctx); err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	return nil
}

// heartbeat reports this probe's work into the store, for the probe list of
// the dashboard and `spyder queue stats`.
func (r *running) heartbeat(ctx context.Context, pt dashboard.Point, now time.Time) {
	bctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	b := store.ProbeBeat{ID: r.probeID, Rate: pt.Rate, Done: pt.Done, Inflight: pt.Inflight, At: now.UTC().Truncate(time.Millisecond)}
	if r.local != nil {
		b.Spooled, b.Held, _ = r.local.Counts(bctx)
	}
	if err := r.q.Heartbeat(bctx, b, beatTTL); err != nil && ctx.Err() == nil {
		r.log.Debug("heartbeat_error", "err", err)
	}
}
