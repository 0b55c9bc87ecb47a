package main

import (
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/spyder-crawler/spyder/concurrency"
	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/limiter"
	"github.com/spyder-crawler/spyder/resolver"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/worker"
)

// runConfig is what the flags of `spyder run` ask for, checked.
type runConfig struct {
	domains     string        // seed from this file first ("-": stdin)
	stdin       io.Reader     // what "-" reads: the app's Reader
	pipedStdin  bool          // standalone, no --domains, and stdin is a pipe or file: seed from it
	revisit     time.Duration // requeue done hosts probed longer ago than this first (0: none)
	crawl       crawl.Config
	loop        worker.Config
	rate        float64
	burst       int
	fleetLimit  bool   // hold the rate across a fleet
	exitIfEmpty bool   // --exit-when-empty (a standalone run always does)
	out         string // "" or "-": stdout
	format      string
	ingest      string
	ingestWait  time.Duration
	ingestTries int
	metricsAddr string
	progress    bool
	fakeProbe   bool
	fakeDelay   time.Duration // --fake-probe-delay
	db          string        // --db, for the control socket beside it
	asnDB       string        // --asn-db, read when the run is wired
}

// newRunConfig reads and checks the flags of `spyder run`; a bad value is
// a usage error naming the flag.
func newRunConfig(c *cli.Context) (runConfig, error) {
	if c.NArg() > 0 {
		return runConfig{}, usagef("run takes no arguments (got %q); the hosts come from --domains or the queue", c.Args().First())
	}
	if err := checkRunFlags(c); err != nil {
		return runConfig{}, err
	}
	memLimit, err := parseSize(c.String("memory-limit"))
	if err != nil {
		return runConfig{}, usagef("--memory-limit %q: %v", c.String("memory-limit"), err)
	}
	keyFn, err := limiter.ParseKeyFunc(c.String("limit-key"))
	if err != nil {
		return runConfig{}, usagef("--limit-key %q: want host, apex or ip", c.String("limit-key"))
	}
	servers := c.String("resolver")
	if servers != "" {
		if servers, err = resolver.ServersFrom(servers); err != nil {
			return runConfig{}, usagef("--resolver: %v", err)
		}
	}
	roots, err := rootCAs(c.String("ca-file"))
	if err != nil {
		return runConfig{}, err
	}
	cfg := runConfig{
		domains: c.String("domains"), rate: c.Float64("rate"), burst: c.Int("burst"),
		fleetLimit: c.Bool("fleet-limiter"), exitIfEmpty: c.Bool("exit-when-empty"),
		out: c.String("out"), format: c.String("format"),
		ingest: c.String("ingest"), ingestWait: c.Duration("ingest-timeout"), ingestTries: c.Int("ingest-retries"),
		metricsAddr: c.String("metrics-addr"), progress: c.Bool("progress"), fakeProbe: c.Bool("fake-probe"),
		fakeDelay: c.Duration("fake-probe-delay"), db: c.String("db"), asnDB: c.String("asn-db"),
		crawl: crawl.Config{
			Resolver: servers, MaxRate: c.Float64("max-rate"), RootCAs: roots, UserAgent: c.String("ua"),
			ExcludeTLDs: splitList(c.String("exclude-tlds")), AllowPrivate: c.Bool("allow-private"), LimitKey: keyFn,
			HostTimeout: c.Duration("host-timeout"), ProbeID: c.String("probe"), RunID: c.String("run"),
		},
		loop: worker.Config{
			Limit:       concurrency.New(concurrency.Config{Max: c.Int("concurrency"), Fixed: c.Bool("fixed-concurrency"), MemoryLimit: memLimit}),
			Concurrency: c.Int("concurrency"), LeaseTTL: c.Duration("lease"), MaxAttempts: c.Int("max-attempts"),
			Grace: c.Duration("grace"), ReclaimEvery: min(c.Duration("lease")/2, 30*time.Second),
			Continuous: c.Bool("continuous"), MaxDomains: int64(c.Int("max-domains")),
		},
	}
	cfg.stdin = c.App.Reader
	// Only a standalone run reads hosts from stdin it was not pointed at:
	// a fleet probe started by a supervisor or ssh may have an open pipe
	// for stdin that never ends, and would wait on it for ever.
	if cfg.domains == "" && strings.TrimSpace(c.String("redis")) == "" && pipedStdin(c.App.Reader) != nil {
		cfg.pipedStdin = true
	}
	if c.String("revisit") != "" {
		if cfg.revisit, err = parseAge(c.String("revisit")); err != nil {
			return runConfig{}, usagef("--revisit: %v", err)
		}
		if !c.IsSet("run") {
			// Under the run that wrote them, the hosts probed again would
			// get only their own edges: every node is already emitted there.
			cfg.crawl.RunID = revisitRunID(time.Now())
		}
	}
	if p := c.String("dial-proxy"); p != "" {
		cfg.crawl.Dial = connectDialer(p)
	}
	return cfg, nil
}

// checkRunFlags checks the flags whose values have bounds or a closed set.
func checkRunFlags(c *cli.Context) error {
	if n := c.Int("concurrency"); n < 1 {
		return usagef("--concurrency %d: want at least 1", n)
	}
	if err := checkLeaseFlags(c); err != nil {
		return err
	}
	if r := c.Float64("rate"); !(r >= 0) {
		return usagef("--rate %v: want 0 (no limit) or more", r)
	}
	if r := c.Float64("max-rate"); !(r >= 0) {
		return usagef("--max-rate %v: want 0 (no limit) or more", r)
	}
	if n := c.Int("burst"); n < 1 {
		return usagef("--burst %d: want at least 1", n)
	}
	for _, name := range []string{"max-domains", "ingest-retries"} {
		if n := c.Int(name); n < 0 {
			return usagef("--%s %d: want 0 or more", name, n)
		}
	}
	for _, name := range []string{"host-timeout", "ingest-timeout"} {
		if d := c.Duration(name); d <= 0 {
			return usagef("--%s %v: want more than 0", name, d)
		}
	}
	if d := c.Duration("grace"); d < 0 {
		return usagef("--grace %v: want 0 (hand the hosts in flight back at once) or more", d)
	}
	switch f := c.String("format"); {
	case f == sink.FormatParquet:
		if o := c.String("out"); o == "" || o == "-" {
			return usagef("--format parquet writes a directory of tables: name it with --out DIR")
		}
	case !slices.Contains(sink.Formats, f):
		return usagef("--format %q: want %s or %s", f, strings.Join(sink.Formats, ", "), sink.FormatParquet)
	}
	if u := c.String("ingest"); u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return usagef("--ingest %q: want an http:// or https:// URL", u)
	}
	if a := c.String("metrics-addr"); a != "" {
		_, port, err := net.SplitHostPort(a)
		if err == nil {
			_, err = net.LookupPort("tcp", port) // a number up to 65535, or a service name
		}
		if err != nil {
			return usagef("--metrics-addr %q: want HOST:PORT or :PORT, with a port from 0 to 65535", a)
		}
	}
	return nil
}

// checkLeaseFlags refuses a --lease under a second and a --max-attempts
// under 1: with them an item would be taken back the moment it was leased,
// or sent to dead at its first reclaim.
func checkLeaseFlags(c *cli.Context) error {
	if c.Duration("lease") < time.Second {
		return usagef("--lease %v: want at least 1s", c.Duration("lease"))
	}
	if c.Int("max-attempts") < 1 {
		return usagef("--max-attempts %d: want at least 1", c.Int("max-attempts"))
	}
	return nil
}

// splitList splits a comma-separated flag value, dropping blanks; "" is
// an empty list, not a missing one.
func splitList(s string) []string {
	out := []string{}
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// revisitRunID is the run ID of a --revisit given no --run: one of its own,
// so that the hosts probed again are written whole (nodes, certificates,
// edges), as a new crawl would write them.
func revisitRunID(now time.Time) string {
	return "revisit-" + now.UTC().Format("20060102T150405Z")
}
