package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spyder-crawler/spyder"

	"github.com/urfave/cli/v2"

	"github.com/spyder-crawler/spyder/asn"
	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/dashboard"
	"github.com/spyder-crawler/spyder/internal/gcpace"
	"github.com/spyder-crawler/spyder/limiter"
	"github.com/spyder-crawler/spyder/metrics"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/worker"
)

func runCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:  "run",
		Usage: "crawl: seed from --domains, then probe hosts from the queue",
		Description: "Standalone (the default), the crawl state lives in the bbolt file --db: run ends\n" +
			"when nothing is pending or in flight, and a run stopped by Ctrl-C or a crash resumes\n" +
			"where it left off when started again. With --redis it is one probe of a fleet: it\n" +
			"works until signalled (or --exit-when-empty). Ctrl-C finishes the hosts in flight\n" +
			"(up to --grace) and hands the rest back; a second Ctrl-C exits at once.\n\n" +
			"Hosts come from --domains, or, standalone, from stdin when it is a pipe or a file (cat\n" +
			"list | spyder run), or from the queue. A standalone run with nothing pending once\n" +
			"seeded (every host already done, or an empty --db) writes nothing and exits 1 saying\n" +
			"so, unless it replays batches an earlier run spooled for --ingest.\n\n" + exitHelp,
		Flags:  runFlags(),
		Action: runAction,
	})
}

// runAction is `spyder run`: it checks the flags, the --domains file and
// that its files can be written, opens the store, wires the probe, the
// output and the loop, seeds, runs the loop and shuts down in order (loop,
// output, store). A start that fails removes the files it created; one a
// signal stops keeps them, and what was seeded, for the next run.
func runAction(c *cli.Context) error {
	ctx := c.Context
	stderr := &lineWriter{w: c.App.ErrWriter}
	log, err := newLogger(c, stderr)
	if err != nil {
		return err
	}
	cfg, err := newRunConfig(c)
	if err != nil {
		return err
	}
	if err := preflight(c, cfg); err != nil {
		return err
	}
	if cfg.crawl.ASN, err = openASN(cfg.asnDB); err != nil {
		return err
	}
	created := missingFiles(cfg.out)
	if strings.TrimSpace(c.String("redis")) == "" {
		created = append(created, missingFiles(c.String("db"))...)
	}
	b, r, err := start(c, cfg, log)
	if err != nil {
		if ctx.Err() != nil {
			// A signal while the queue opened or seeded is the stop the
			// user asked for, not a failure: what was seeded is kept, as
			// after a later Ctrl-C, and seeding is idempotent, so running
			// again takes up the rest.
			log.Info("stop", "during", "start", "signalled", true)
			return interrupted(strings.TrimSpace(c.String("redis")) != "", cfg.exitIfEmpty, -1)
		}
		created.remove()
		return err
	}
	began := time.Now()
	runErr := r.run(ctx, stderr, cfg.progress && isTerminal(c.App.ErrWriter))
	if err := r.close(); err != nil && runErr == nil {
		runErr = err
	}
	st, _ := b.Stats(context.WithoutCancel(ctx))
	log.Info("stop", "done", r.loop.Done(), "elapsed", time.Since(began).Round(time.Millisecond).String(),
		"pending", st.Pending, "processing", st.Processing, "dead", st.Dead, "signalled", ctx.Err() != nil)
	if err := closeBackend(b); err != nil && runErr == nil {
		runErr = err
	}
	if runErr == nil && ctx.Err() != nil {
		runErr = interrupted(b.Shared(), cfg.exitIfEmpty, st.Pending+st.Processing)
	}
	return runErr
}

// openASN reads the --asn-db database at path, if one is given: once the
// flags are checked, and before the store is opened, so that a bad file
// stops the run before anything is written.
func openASN(path string) (*asn.DB, error) {
	if path == "" {
		return nil, nil
	}
	db, err := asn.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--asn-db: %w", err)
	}
	return db, nil
}

// start opens the store, wires the run and then seeds the queue, so that
// an output or a metrics address that cannot be had stops the run before
// any host is seeded. On error, everything it opened is closed again.
func start(c *cli.Context, cfg runConfig, log *slog.Logger) (store.Backend, *running, error) {
	ctx := c.Context
	b, err := openBackend(ctx, c, false)
	if err != nil {
		return nil, nil, err
	}
	log.Info("start", "version", spyder.Version, "queue", b.Name(), "concurrency", cfg.loop.Concurrency, "adaptive", cfg.loop.Limit.Adaptive(), "run", cfg.crawl.RunID, "probe", cfg.crawl.ProbeID)
	local, created, err := openLocal(c, b, log)
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	r, err := wire(c, cfg, b, local, log)
	if err == nil {
		err = prepare(ctx, cfg, b, log)
		var none nothingToDo
		if errors.As(err, &none) && r.spooled > 0 {
			// Replaying what an earlier run spooled for --ingest is work.
			log.Info("nothing_to_crawl", "note", "only replaying the batches spooled for --ingest")
			err = nil
		}
	}
	if err != nil {
		if r != nil {
			r.close()
		}
		if created != "" {
			os.RemoveAll(created)
		}
		b.Close()
		return nil, nil, err
	}
	return b, r, nil
}

// prepare seeds the queue from --domains (or, standalone, piped stdin),
// queues again the hosts due for a --revisit and, standalone, hands back
// the leases an earlier run left in the file, then refuses a queue with
// nothing left to crawl (errNothingToDo), which start's caller reports
// before any output.
func prepare(ctx context.Context, cfg runConfig, b store.Backend, log *slog.Logger) error {
	var rep *queue.SeedReport
	switch {
	case cfg.domains != "":
		r, err := queue.SeedFile(ctx, b, cfg.domains, cfg.stdin, log)
		if err != nil {
			return err
		}
		rep = &r
	case cfg.pipedStdin:
		r, err := seedImplicitStdin(ctx, cfg, b, log)
		if err != nil {
			return err
		}
		if r.Lines > 0 {
			cfg.domains, rep = "-", &r
		}
	}
	if cfg.revisit > 0 {
		n, err := b.Requeue(ctx, queue.Selector{Before: time.Now().Add(-cfg.revisit)})
		if err != nil {
			return fmt.Errorf("%s: revisit: %w", b.Name(), err)
		}
		log.Info("revisit", "requeued", n, "older_than", cfg.revisit.String())
	}
	if b.Shared() {
		return nil
	}
	if err := worker.Recover(ctx, b, log); err != nil {
		return fmt.Errorf("%s: %w", b.Name(), err)
	}
	st, err := b.Stats(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", b.Name(), err)
	}
	if st.Pending == 0 && st.Processing == 0 {
		return errNothingToDo(cfg, b.Name(), rep, st)
	}
	return nil
}

// running is a wired run: the loop and what must be closed after it, in
// order.
type running struct {
	loop    *worker.Loop
	q       store.Backend
	m       *metrics.Set
	log     *slog.Logger
	batcher *sink.Batcher
	board   *dashboard.Board
	probeID string
	spooled int              // batches an earlier run spooled for --ingest, replayed by this one
	local   *boltstore.Local // a fleet probe's own file; nil standalone
	closes  []func() error   // the limiter, the outputs, the servers; nil once closed
}

// wire builds the limiter, the probe, the metrics, the outputs and the
// loop. On error, what it built is returned too, for close.
func wire(c *cli.Context, cfg runConfig, b store.Backend, local *boltstore.Local, log *slog.Logger) (*running, error) {
	// The collector's pacing is the process's: thousands of visits in
	// flight drop most of what their handshakes allocate at once.
	gcpace.Start(gcpace.DefaultTarget)
	rates := limiter.New(cfg.rate, cfg.burst)
	lim := limiter.Limiter(rates)
	if cfg.fleetLimit {
		lim = b.Limiters(rates, cfg.rate, cfg.burst, log)
	}
	r := &running{q: b, log: log, m: metrics.New(lim), local: local, closes: []func() error{lim.Close}}
	if local != nil {
		r.closes = []func() error{local.Close, lim.Close} // closed last
	}
	probe, err := newVisitor(cfg, lim, r.m, log)
	if err != nil {
		return r, err
	}
	out, err := openOutputs(c.Context, cfg, c.App.Writer, b, local, log, r.m)
	if err != nil {
		return r, err
	}
	r.closes = append(r.closes, out.Close)
	r.spooled = out.spooled
	seen, err := b.Emitted()
	if err != nil {
		return r, fmt.Errorf("%s: %w", b.Name(), err)
	}
	r.batcher = sink.NewBatcher(sink.Counting{Sink: out.sink, M: r.m}, seen,
		sink.BatcherConfig{ProbeID: cfg.crawl.ProbeID, RunID: cfg.crawl.RunID, Queue: b, Hosts: cfg.format == sink.FormatHosts})
	loop := cfg.loop
	loop.ExitWhenEmpty = !b.Shared() || cfg.exitIfEmpty
	if c, ok := probe.(*crawl.Crawler); ok {
		loop.Check = c.Resolver().Check
	}
	if local != nil {
		loop.Held = local.Held()
	}
	r.loop = worker.New(b, probe, r.batcher, log, r.m, loop)
	r.probeID = cfg.crawl.ProbeID
	return r, r.serve(c.Context, cfg)
}

// newVisitor returns the crawler, whose resolvers m reports, or with
// --fake-probe the stand-in that contacts nothing.
func newVisitor(cfg runConfig, lim limiter.Limiter, m *metrics.Set, log *slog.Logger) (worker.Visitor, error) {
	cc := cfg.crawl
	cc.Limiter = lim
	crawler, err := crawl.New(cc)
	if err != nil {
		return nil, fmt.Errorf("crawler: %w", err)
	}
	if !cfg.fakeProbe {
		m.Register(crawler.Resolver().Collector())
		return crawler, nil
	}
	log.Warn("fake_probe", "note", "no host is contacted: every result is made up (a load test)")
	return fakeVisitor{probeID: cc.ProbeID, runID: cc.RunID, now: time.Now, delay: cfg.fakeDelay}, nil
}

// run runs the loop with the progress line and metrics polling beside it,
// then flushes the output.
func (r *running) run(ctx context.Context, stderr *lineWriter, progress bool) error {
	bg := context.WithoutCancel(ctx)
	if st, err := r.q.Stats(ctx); err == nil {
		r.loop.NoteSeen(st.Seen)
		r.m.ObserveQueue(st)
	}
	watchDone := make(chan struct{})
	watchCtx, stopWatch := context.WithCancel(bg)
	go func() {
		defer close(watchDone)
		watch(watchCtx, r, stderr, progress)
	}()
	runErr := r.loop.Run(ctx)
	stopWatch()
	<-watchDone
	stderr.clear()

	cctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	if err := r.batcher.Close(cctx); err != nil && runErr == nil {
		runErr = fmt.Errorf("flush output: %w", err)
	}
	return runErr
}

// close closes what wire opened, last first, once; it returns the first
// error.
func (r *running) close() error {
	closes := r.closes
	r.closes = nil
	var first error
	for i := len(closes) - 1; i >= 0; i-- {
		if err := closes[i](); err != nil && first == nil {
			first = err
		}
	}
	return first
}
