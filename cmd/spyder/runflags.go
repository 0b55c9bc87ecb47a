package main

import (
	"os"
	"strings"
	"time"

	"github.com/spyder-crawler/spyder"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/limiter"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/sink"
)

// Defaults of `spyder run`.
const (
	// defaultConcurrency bounds the adaptive limit, which starts lower and
	// grows while the machine keeps up (docs/concurrency.md): four times
	// the fixed number the crawl package measured, room for a bigger
	// machine at some 35 KiB a host in flight.
	defaultConcurrency = 4 * crawl.DefaultWorkers
	defaultGrace       = 30 * time.Second
	defaultMaxDomains  = 1_000_000
	defaultRunID       = "default"
)

// runFlags are the flags of `spyder run`, after the backend's.
func runFlags() []cli.Flag {
	str := func(f *cli.StringFlag) cli.Flag { return altsrc.NewStringFlag(f) }
	integer := func(f *cli.IntFlag) cli.Flag { return altsrc.NewIntFlag(f) }
	dur := func(f *cli.DurationFlag) cli.Flag { return altsrc.NewDurationFlag(f) }
	boolean := func(f *cli.BoolFlag) cli.Flag { return altsrc.NewBoolFlag(f) }
	env := func(name string) []string { return []string{"SPYDER_" + name} }
	hostname, _ := os.Hostname()
	flags := []cli.Flag{
		str(&cli.StringFlag{Name: "domains", Category: catQueue, TakesFile: true, EnvVars: env("DOMAINS"),
			Usage: "seed the queue from this `FILE` first: one host (or URL) per line, # comments, or a top list's rank,host CSV lines (Tranco, Umbrella); - for stdin, which a standalone run (no --redis) also reads without --domains when it is a pipe or a file"}),
		integer(&cli.IntFlag{Name: "concurrency", Value: defaultConcurrency, Category: catCrawl, EnvVars: env("CONCURRENCY"),
			Usage: "the most hosts probed at once: the adaptive limit grows up to this while the process keeps up (docs/concurrency.md)"}),
		altsrc.NewFloat64Flag(&cli.Float64Flag{Name: "rate", Value: limiter.DefaultPerSecond, Category: catCrawl, EnvVars: env("RATE"),
			Usage: "requests per second to one host (or apex, or IP: --limit-key); 0 for no limit"}),
		altsrc.NewFloat64Flag(&cli.Float64Flag{Name: "max-rate", Category: catCrawl, EnvVars: env("MAX_RATE"),
			Usage: "requests per second to all hosts together, and DNS queries per second to all resolvers together (each at most `N`, bursts up to N); 0 for no limit"}),
		integer(&cli.IntFlag{Name: "burst", Value: limiter.DefaultBurst, Category: catCrawl, EnvVars: env("BURST"),
			Usage: "requests to one host that may go out without waiting"}),
		str(&cli.StringFlag{Name: "limit-key", Value: "host", Category: catCrawl, EnvVars: env("LIMIT_KEY"),
			Usage: "what the rate applies to: `host`, apex (registrable domain) or ip (the server)"}),
		boolean(&cli.BoolFlag{Name: "fleet-limiter", Category: catCrawl, EnvVars: env("FLEET_LIMITER"),
			Usage: "with --redis, hold the rate across every probe of the fleet (falls back to a local limiter when Redis is away)"}),
		str(&cli.StringFlag{Name: "state-dir", Category: catQueue, TakesFile: true, EnvVars: env("STATE_DIR"),
			DefaultText: stateRoot + "/<probe>-<hash of --redis and --queue-key>",
			Usage:       "with --redis, this probe's own `DIR`: a bbolt file keeping what Redis or --ingest did not take yet (one probe per DIR)"}),
		dur(&cli.DurationFlag{Name: "lease", Value: queue.DefaultLeaseTTL, Category: catQueue, EnvVars: env("LEASE"),
			Usage: "lease TTL: a host a crashed worker held is probed again after this"}),
		str(&cli.StringFlag{Name: "revisit", Category: catQueue, EnvVars: env("REVISIT"),
			Usage: "first queue again the done hosts last probed longer ago than `AGE` (e.g. 7d, 36h); without --run, under a run ID of its own (revisit-<UTC time>), so every node and edge they hold is written again; with --run, what that run already wrote is not written again"}),
		integer(&cli.IntFlag{Name: "max-attempts", Value: queue.DefaultMaxAttempts, Category: catQueue, EnvVars: env("MAX_ATTEMPTS"),
			Usage: "a host whose output failed (or whose lease expired) this many times goes to dead"}),
		boolean(&cli.BoolFlag{Name: "continuous", Category: catCrawl, EnvVars: env("CONTINUOUS"),
			Usage: "also enqueue every discovered host (name servers, mail exchangers, CNAME targets, links)"}),
		integer(&cli.IntFlag{Name: "max-domains", Value: defaultMaxDomains, Category: catCrawl, EnvVars: env("MAX_DOMAINS"),
			Usage: "with --continuous, stop enqueueing once the queue has seen this many hosts"}),
		str(&cli.StringFlag{Name: "exclude-tlds", Value: strings.Join(crawl.DefaultExcludeTLDs, ","), Category: catCrawl, EnvVars: env("EXCLUDE_TLDS"),
			Usage: "comma-separated top-level domains probed by DNS only (\"\" for none)"}),
		str(&cli.StringFlag{Name: "ua", Category: catCrawl, EnvVars: env("UA"),
			DefaultText: "spyder/" + spyder.Version + " (+" + spyder.ProjectURL + ")",
			Usage:       "user agent; robots.txt groups for spyder apply"}),
		str(&cli.StringFlag{Name: "resolver", Category: catCrawl, EnvVars: env("RESOLVER"),
			DefaultText: "every nameserver of /etc/resolv.conf",
			Usage:       "DNS servers, comma-separated: `IP[:PORT]` or [IPv6]:PORT, port 53 by default, or a file of them (one or more a line, # comments); lookups take turns, a silent one is set aside for 30s"}),
		boolean(&cli.BoolFlag{Name: "allow-private", Category: catCrawl, EnvVars: env("ALLOW_PRIVATE"),
			Usage: "connect to loopback, private and link-local addresses too"}),
		str(&cli.StringFlag{Name: "asn-db", Category: catCrawl, TakesFile: true, EnvVars: env("ASN_DB"),
			Usage: "give IP nodes their AS, organisation and prefix from this `FILE`: a MaxMind ASN database (GeoLite2-ASN) or iptoasn.com's ip2asn TSV"}),
		dur(&cli.DurationFlag{Name: "host-timeout", Value: crawl.DefaultHostTimeout, Category: catCrawl, EnvVars: env("HOST_TIMEOUT"),
			Usage: "bound on one host's whole probe"}),
		str(&cli.StringFlag{Name: "probe", Value: hostname, Category: catOutput, EnvVars: env("PROBE"),
			DefaultText: "the machine's host name", Usage: "probe ID stamped on the output"}),
		str(&cli.StringFlag{Name: "run", Value: defaultRunID, Category: catOutput, EnvVars: env("RUN"),
			Usage: "run ID: each node and edge is written once per run; a new ID writes everything again"}),
		str(&cli.StringFlag{Name: "out", Category: catOutput, TakesFile: true, EnvVars: env("OUT"), DefaultText: "stdout",
			Usage: "append output to this `FILE` (fsynced per batch) instead of stdout; with --format parquet, the directory of tables"}),
		str(&cli.StringFlag{Name: "format", Value: sink.FormatBatch, Category: catOutput, EnvVars: env("FORMAT"),
			Usage: "output format: batch (one batch object per line), edges (one edge per line), lines (one object per node, edge and probe outcome, each with a kind), hosts (one object per visited host, failed ones too: every step's outcome, records, certificates, links and redirects, whole on each line) or parquet (tables in the --out directory)"}),
		str(&cli.StringFlag{Name: "ingest", Category: catOutput, EnvVars: env("INGEST"),
			Usage: "POST each batch to this `URL` (retried; spooled on disk when it fails, in --state-dir with --redis, and replayed later)"}),
		integer(&cli.IntFlag{Name: "ingest-retries", Value: 3, Category: catOutput, EnvVars: env("INGEST_RETRIES"),
			Usage: "retries of a failed POST before the batch is spooled"}),
		dur(&cli.DurationFlag{Name: "ingest-timeout", Value: 10 * time.Second, Category: catOutput, EnvVars: env("INGEST_TIMEOUT"),
			Usage: "bound on one POST"}),
		boolean(&cli.BoolFlag{Name: "exit-when-empty", Category: catOps, EnvVars: env("EXIT_WHEN_EMPTY"),
			Usage: "with --redis, exit once nothing is pending or in flight (standalone always does)"}),
		dur(&cli.DurationFlag{Name: "grace", Value: defaultGrace, Category: catOps, EnvVars: env("GRACE"),
			Usage: "on SIGINT/SIGTERM, time given to in-flight hosts before the rest is handed back"}),
		str(&cli.StringFlag{Name: "metrics-addr", Category: catOps, EnvVars: env("METRICS_ADDR"), DefaultText: "off",
			Usage: "serve the dashboard (/), Prometheus /metrics and /healthz on this `ADDR` (e.g. :9090)"}),
		boolean(&cli.BoolFlag{Name: "progress", Category: catOps, EnvVars: env("PROGRESS"), Value: true,
			Usage: "draw a progress line on stderr when it is a terminal"}),
	}
	return append(append(append(backendFlags(), flags...), limitFlags()...), hiddenRunFlags()...)
}

// hiddenRunFlags are the flags of `spyder run` that --help leaves out.
func hiddenRunFlags() []cli.Flag {
	env := func(name string) []string { return []string{"SPYDER_" + name} }
	return []cli.Flag{
		// Hidden, for end-to-end tests against a simulated internet.
		&cli.StringFlag{Name: "ca-file", Hidden: true, EnvVars: env("CA_FILE"), Usage: "extra root CA PEM file"},
		&cli.StringFlag{Name: "dial-proxy", Hidden: true, EnvVars: env("DIAL_PROXY"),
			Usage: "send every connection through this HTTP CONNECT proxy"},
		// Hidden, for load tests: no env var, so no stray setting fakes a crawl.
		&cli.BoolFlag{Name: "fake-probe", Hidden: true, Usage: "probe nothing: answer every host with a fixed result (a load test)"},
		&cli.DurationFlag{Name: "fake-probe-delay", Hidden: true, Usage: "with --fake-probe, take this long per host (a slow crawl to watch)"},
	}
}

// limitFlags are the flags of the concurrency limit, besides --concurrency.
func limitFlags() []cli.Flag {
	env := func(name string) []string { return []string{"SPYDER_" + name} }
	return []cli.Flag{
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "fixed-concurrency", Category: catCrawl, EnvVars: env("FIXED_CONCURRENCY"),
			Usage: "probe exactly --concurrency hosts at once instead of adapting the number to the machine's load (for benchmarks)"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "memory-limit", Category: catCrawl, EnvVars: env("MEMORY_LIMIT"), DefaultText: "GOMEMLIMIT, if set",
			Usage: "the memory `SIZE` (e.g. 2GiB, 512MiB) the adaptive limit keeps the process under: it stops growing at 80% and shrinks above 90%"}),
	}
}
