package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"spyder/crawl"
	"spyder/limiter"
	"spyder/queue"
	"spyder/store/redisstore"
)

// Defaults of `spyder run`.
const (
	defaultConcurrency = crawl.DefaultWorkers // the crawl package measured it
	defaultGrace       = 30 * time.Second
	defaultMaxDomains  = 1_000_000
	defaultRunID       = "default"
)

func runFlags() []cli.Flag {
	str := func(f *cli.StringFlag) cli.Flag { return altsrc.NewStringFlag(f) }
	integer := func(f *cli.IntFlag) cli.Flag { return altsrc.NewIntFlag(f) }
	dur := func(f *cli.DurationFlag) cli.Flag { return altsrc.NewDurationFlag(f) }
	boolean := func(f *cli.BoolFlag) cli.Flag { return altsrc.NewBoolFlag(f) }
	env := func(name string) []string { return []string{"SPYDER_" + name} }
	hostname, _ := os.Hostname()
	flags := []cli.Flag{
		str(&cli.StringFlag{Name: "domains", Category: catQueue, TakesFile: true, EnvVars: env("DOMAINS"),
			Usage: "seed the queue from this `FILE` first (one host per line, # comments; - for stdin)"}),
		integer(&cli.IntFlag{Name: "concurrency", Value: defaultConcurrency, Category: catCrawl, EnvVars: env("CONCURRENCY"),
			Usage: "hosts probed at once"}),
		altsrc.NewFloat64Flag(&cli.Float64Flag{Name: "rate", Value: limiter.DefaultPerSecond, Category: catCrawl, EnvVars: env("RATE"),
			Usage: "requests per second to one host (or apex, or IP: --limit-key)"}),
		integer(&cli.IntFlag{Name: "burst", Value: limiter.DefaultBurst, Category: catCrawl, EnvVars: env("BURST"),
			Usage: "requests to one host that may go out without waiting"}),
		str(&cli.StringFlag{Name: "limit-key", Value: "host", Category: catCrawl, EnvVars: env("LIMIT_KEY"),
			Usage: "what the rate applies to: `host`, apex (registrable domain) or ip (the server)"}),
		boolean(&cli.BoolFlag{Name: "fleet-limiter", Category: catCrawl, EnvVars: env("FLEET_LIMITER"),
			Usage: "with --redis, hold the rate across every probe of the fleet (falls back to a local limiter when Redis is away)"}),
		dur(&cli.DurationFlag{Name: "lease", Value: queue.DefaultLeaseTTL, Category: catQueue, EnvVars: env("LEASE"),
			Usage: "lease TTL: a host a crashed worker held is probed again after this"}),
		integer(&cli.IntFlag{Name: "max-attempts", Value: queue.DefaultMaxAttempts, Category: catQueue, EnvVars: env("MAX_ATTEMPTS"),
			Usage: "a host whose output failed (or whose lease expired) this many times goes to dead"}),
		boolean(&cli.BoolFlag{Name: "continuous", Category: catCrawl, EnvVars: env("CONTINUOUS"),
			Usage: "also enqueue every discovered host (name servers, mail exchangers, CNAME targets, links)"}),
		integer(&cli.IntFlag{Name: "max-domains", Value: defaultMaxDomains, Category: catCrawl, EnvVars: env("MAX_DOMAINS"),
			Usage: "with --continuous, stop enqueueing once the queue has seen this many hosts"}),
		str(&cli.StringFlag{Name: "exclude-tlds", Value: strings.Join(crawl.DefaultExcludeTLDs, ","), Category: catCrawl, EnvVars: env("EXCLUDE_TLDS"),
			Usage: "comma-separated top-level domains probed by DNS only (\"\" for none)"}),
		str(&cli.StringFlag{Name: "ua", Category: catCrawl, EnvVars: env("UA"),
			Usage: "user agent (default \"spyder/" + crawl.Version + " (+" + crawl.ProjectURL + ")\")"}),
		str(&cli.StringFlag{Name: "resolver", Category: catCrawl, EnvVars: env("RESOLVER"),
			Usage: "DNS server `IP:PORT` (default: the first nameserver of /etc/resolv.conf)"}),
		boolean(&cli.BoolFlag{Name: "allow-private", Category: catCrawl, EnvVars: env("ALLOW_PRIVATE"),
			Usage: "connect to loopback, private and link-local addresses too"}),
		dur(&cli.DurationFlag{Name: "host-timeout", Value: crawl.DefaultHostTimeout, Category: catCrawl, EnvVars: env("HOST_TIMEOUT"),
			Usage: "bound on one host's whole probe"}),
		str(&cli.StringFlag{Name: "probe", Value: hostname, Category: catOutput, EnvVars: env("PROBE"),
			Usage: "probe ID stamped on the output"}),
		str(&cli.StringFlag{Name: "run", Value: defaultRunID, Category: catOutput, EnvVars: env("RUN"),
			Usage: "run ID: each node and edge is written once per run; a new ID writes everything again"}),
		str(&cli.StringFlag{Name: "out", Category: catOutput, TakesFile: true, EnvVars: env("OUT"),
			Usage: "append output to this `FILE` (fsynced per batch) instead of stdout"}),
		str(&cli.StringFlag{Name: "format", Value: crawl.FormatBatch, Category: catOutput, EnvVars: env("FORMAT"),
			Usage: "output format: batch (one batch object per line) or edges (one edge per line)"}),
		str(&cli.StringFlag{Name: "ingest", Category: catOutput, EnvVars: env("INGEST"),
			Usage: "POST each batch to this `URL` (retried; spooled in the store when it fails, replayed later)"}),
		integer(&cli.IntFlag{Name: "ingest-retries", Value: 3, Category: catOutput, EnvVars: env("INGEST_RETRIES"),
			Usage: "retries of a failed POST before the batch is spooled"}),
		dur(&cli.DurationFlag{Name: "ingest-timeout", Value: 10 * time.Second, Category: catOutput, EnvVars: env("INGEST_TIMEOUT"),
			Usage: "bound on one POST"}),
		boolean(&cli.BoolFlag{Name: "exit-when-empty", Category: catOps, EnvVars: env("EXIT_WHEN_EMPTY"),
			Usage: "with --redis, exit once nothing is pending or in flight (standalone always does)"}),
		dur(&cli.DurationFlag{Name: "grace", Value: defaultGrace, Category: catOps, EnvVars: env("GRACE"),
			Usage: "on SIGINT/SIGTERM, time given to in-flight hosts before the rest is handed back"}),
		str(&cli.StringFlag{Name: "metrics-addr", Category: catOps, EnvVars: env("METRICS_ADDR"),
			Usage: "serve Prometheus /metrics and /healthz on this `ADDR` (e.g. :9090)"}),
		boolean(&cli.BoolFlag{Name: "progress", Category: catOps, EnvVars: env("PROGRESS"), Value: true,
			Usage: "draw a progress line on stderr when it is a terminal"}),
		// Hidden, for end-to-end tests against a simulated internet.
		&cli.StringFlag{Name: "ca-file", Hidden: true, EnvVars: env("CA_FILE"), Usage: "extra root CA PEM file"},
		&cli.StringFlag{Name: "dial-proxy", Hidden: true, EnvVars: env("DIAL_PROXY"),
			Usage: "send every connection through this HTTP CONNECT proxy"},
		// Hidden, for load tests: no env var, so no stray setting fakes a crawl.
		&cli.BoolFlag{Name: "fake-probe", Hidden: true, Usage: "probe nothing: answer every host with a fixed result (fakeprobe.go)"},
	}
	return append(backendFlags(), flags...)
}

func runCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:  "run",
		Usage: "crawl: seed from --domains, then probe hosts from the queue",
		Description: "Standalone (the default), the crawl state lives in the bbolt file --db: run ends\n" +
			"when nothing is pending or in flight, and a run stopped by Ctrl-C or a crash resumes\n" +
			"where it left off when started again. With --redis it is one probe of a fleet: it\n" +
			"works until signalled (or --exit-when-empty). Ctrl-C finishes the hosts in flight\n" +
			"(up to --grace) and hands the rest back; a second Ctrl-C exits at once.",
		Flags:  runFlags(),
		Action: runAction,
	})
}

func runAction(c *cli.Context) error {
	ctx := c.Context
	bg := context.WithoutCancel(ctx)
	stderr := &lineWriter{w: c.App.ErrWriter}
	log, err := newLogger(c, stderr)
	if err != nil {
		return err
	}
	if c.NArg() > 0 {
		return usagef("run takes no arguments (got %q); the hosts come from --domains or the queue", c.Args().First())
	}
	if n := c.Int("concurrency"); n < 1 {
		return usagef("--concurrency %d: want at least 1", n)
	}
	if c.Duration("lease") < time.Second {
		return usagef("--lease %v: want at least 1s", c.Duration("lease"))
	}
	if c.Int("max-attempts") < 1 {
		return usagef("--max-attempts %d: want at least 1", c.Int("max-attempts"))
	}
	format := c.String("format")
	if format != crawl.FormatBatch && format != crawl.FormatEdges {
		return usagef("--format %q: want batch or edges", format)
	}
	keyFn, err := limiter.ParseKeyFunc(c.String("limit-key"))
	if err != nil {
		return usagef("--limit-key %q: want host, apex or ip", c.String("limit-key"))
	}
	if u := c.String("ingest"); u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return usagef("--ingest %q: want an http:// or https:// URL", u)
	}
	roots, err := rootCAs(c.String("ca-file"))
	if err != nil {
		return err
	}

	b, err := openBackend(ctx, c, false)
	if err != nil {
		return err
	}
	defer b.Close()
	fleet := b.redis != nil
	log.Info("start", "version", crawl.Version, "queue", b.name, "concurrency", c.Int("concurrency"), "run", c.String("run"), "probe", c.String("probe"))

	if p := c.String("domains"); p != "" {
		if _, err := seedDomains(ctx, b.q, p, os.Stdin, log); err != nil {
			return err
		}
	}
	if !fleet {
		if err := recoverOrphans(ctx, b.q, log); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
	}

	// Limiter and crawler.
	local := limiter.New(c.Float64("rate"), c.Int("burst"))
	var lim limiter.Limiter = local
	if fleet && c.Bool("fleet-limiter") {
		lim = redisstore.NewLimiter(b.rc, b.redis.Key(), c.Float64("rate"), c.Int("burst"), local, log)
	}
	defer lim.Close()
	m := newMetrics(lim)
	var excl []string
	for _, t := range strings.Split(c.String("exclude-tlds"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			excl = append(excl, t)
		}
	}
	if excl == nil {
		excl = []string{}
	}
	cfg := crawl.Config{
		Resolver: c.String("resolver"), RootCAs: roots, UserAgent: c.String("ua"),
		ExcludeTLDs: excl, AllowPrivate: c.Bool("allow-private"), Limiter: lim, LimitKey: keyFn,
		HostTimeout: c.Duration("host-timeout"), ProbeID: c.String("probe"), RunID: c.String("run"),
	}
	if p := c.String("dial-proxy"); p != "" {
		cfg.Dial = connectDialer(p)
	}
	crawler, err := crawl.New(cfg)
	if err != nil {
		return fmt.Errorf("crawler: %w", err)
	}
	var probe prober = crawler
	if c.Bool("fake-probe") {
		probe = fakeProbe{probeID: cfg.ProbeID, runID: cfg.RunID, now: time.Now}
		log.Warn("fake_probe", "note", "no host is contacted: every result is made up (a load test)")
	}

	if addr := c.String("metrics-addr"); addr != "" {
		stop, err := serveMetrics(ctx, addr, m, b.q, log)
		if err != nil {
			return err
		}
		defer stop()
	}

	// Output.
	out, err := openOutputs(c, b, log, m)
	if err != nil {
		return err
	}
	closeOut := sync1(out.Close)
	defer closeOut()
	seen, err := b.emitted()
	if err != nil {
		return fmt.Errorf("%s: %w", b.name, err)
	}
	batcher := crawl.NewBatcher(countingSink{out.sink, m}, seen, crawl.BatcherConfig{ProbeID: cfg.ProbeID, RunID: cfg.RunID})

	w := &loop{
		q: b.q, probe: probe, out: batcher, log: log, m: m,
		concurrency: c.Int("concurrency"), leaseTTL: c.Duration("lease"), maxAttempts: c.Int("max-attempts"),
		grace: c.Duration("grace"), exitWhenEmpty: !fleet || c.Bool("exit-when-empty"),
		reclaimEvery: min(c.Duration("lease")/2, 30*time.Second),
		continuous:   c.Bool("continuous"), maxDomains: int64(c.Int("max-domains")),
	}
	if st, err := b.q.Stats(ctx); err == nil {
		w.seen.Store(st.Seen)
		m.observeQueue(st)
		if !fleet && st.Pending == 0 && st.Processing == 0 {
			log.Warn("nothing_to_do", "queue", b.name, "dead", st.Dead,
				"note", "nothing is pending: give --domains, or see `spyder queue dead list`")
		}
	}
	watchDone := make(chan struct{})
	watchCtx, stopWatch := context.WithCancel(bg)
	go func() {
		defer close(watchDone)
		watch(watchCtx, w, stderr, c.Bool("progress") && isTerminal(c.App.ErrWriter))
	}()
	start := time.Now()
	runErr := w.run(ctx)
	stopWatch()
	<-watchDone
	stderr.clear()

	cctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	if err := batcher.Close(cctx); err != nil && runErr == nil {
		runErr = fmt.Errorf("flush output: %w", err)
	}
	if err := closeOut(); err != nil && runErr == nil {
		runErr = err
	}
	st, _ := b.q.Stats(bg)
	log.Info("stop", "done", w.done.Load(), "elapsed", time.Since(start).Round(time.Millisecond).String(),
		"pending", st.Pending, "processing", st.Processing, "dead", st.Dead, "signalled", ctx.Err() != nil)
	if runErr != nil {
		return runErr
	}
	return b.Close()
}

// sync1 makes f safe to call twice (a deferred call after an explicit one).
func sync1(f func() error) func() error {
	var done bool
	var err error
	return func() error {
		if !done {
			done, err = true, f()
		}
		return err
	}
}

// openOutputs builds the sinks the flags ask for: --out or stdout, and
// --ingest.
func openOutputs(c *cli.Context, b *backend, log *slog.Logger, m *metrics) (*outputs, error) {
	o := &outputs{}
	var sinks teeSink
	format := c.String("format")
	switch path := c.String("out"); {
	case path != "" && path != "-":
		s, closeFile, err := openFileSink(path, format, log)
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, s)
		o.closes = append(o.closes, closeFile)
	case c.String("ingest") == "" || path == "-":
		s, err := crawl.NewJSONSink(c.App.Writer, format)
		if err != nil {
			return nil, usagef("--format: %v", err)
		}
		sinks = append(sinks, s)
	}
	if u := c.String("ingest"); u != "" {
		sp, err := b.spool()
		if err != nil {
			o.Close()
			return nil, fmt.Errorf("%s: %w", b.name, err)
		}
		if n, err := sp.Len(c.Context); err == nil {
			m.spoolDepth.Set(float64(n))
			if n > 0 {
				log.Info("ingest_spool", "batches", n, "note", "replaying batches spooled by an earlier run")
			}
		}
		s := newIngestSink(u, c.Duration("ingest-timeout"), c.Int("ingest-retries"), sp, log, m)
		sinks = append(sinks, s)
		o.closes = append(o.closes, s.Close)
	}
	if len(sinks) == 1 {
		o.sink = sinks[0]
	} else {
		o.sink = sinks
	}
	return o, nil
}

// watch polls the queue every second for the metrics and the progress
// line until ctx ends.
func watch(ctx context.Context, w *loop, lw *lineWriter, progress bool) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var r rate
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			st, err := w.q.Stats(qctx)
			cancel()
			if err != nil {
				continue
			}
			w.m.observeQueue(st)
			if st.Seen > w.seen.Load() {
				w.seen.Store(st.Seen)
			}
			perSec := r.add(now, w.done.Load())
			if progress {
				lw.draw(progressLine(w.done.Load(), st, w.inflightLen(), perSec))
			}
		}
	}
}

// recoverOrphans hands back leases a previous standalone run left in the
// bbolt file (Ctrl-C twice, a crash): the file is locked, so no other
// process can hold them, and waiting for them to expire would only delay
// the resumed crawl.
func recoverOrphans(ctx context.Context, q queue.Queue, log *slog.Logger) error {
	st, err := q.Stats(ctx)
	if err != nil || st.Processing == 0 {
		return err
	}
	var ls []queue.Lease
	errStop := errors.New("stop")
	err = q.Dump(ctx, func(r queue.Record) error {
		switch r.Kind {
		case queue.KindProcessing:
			if r.Item != nil {
				ls = append(ls, queue.Lease{Item: *r.Item, ID: r.LeaseID, Deadline: r.Deadline})
			}
		case queue.KindDead, queue.KindSeen:
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return fmt.Errorf("recover leases: %w", err)
	}
	n, err := q.Release(ctx, ls)
	if err != nil {
		return fmt.Errorf("recover leases: %w", err)
	}
	log.Info("lease_recovered", "count", n, "hosts", hostList(ls), "note", "left in flight by an earlier run; probed again")
	return nil
}

// rootCAs returns the system roots plus the PEM certificates of path.
func rootCAs(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ca-file %s: %w", path, pathErr(err))
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// connectDialer dials every address through an HTTP CONNECT proxy.
func connectDialer(proxy string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", proxy)
		if err != nil {
			return nil, fmt.Errorf("dial proxy %s: %w", proxy, err)
		}
		stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
		defer stop()
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			conn.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("proxy connect %s: %w", addr, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			conn.Close()
			return nil, fmt.Errorf("connect %s: %s", addr, resp.Status)
		}
		if !stop() {
			conn.Close()
			return nil, ctx.Err()
		}
		conn.SetDeadline(time.Time{})
		if br.Buffered() > 0 {
			return &bufConn{Conn: conn, r: br}, nil
		}
		return conn, nil
	}
}

type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }
