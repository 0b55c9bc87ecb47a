package crawl

import (
	"context"
	"crypto/x509"
	"math"
	"net"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/spyder-crawler/spyder"

	"github.com/spyder-crawler/spyder/asn"
	"github.com/spyder-crawler/spyder/resolver"
)

// Defaults for the [Config] fields left zero.
const (
	DefaultBodyCap      = 512 << 10
	DefaultMaxRedirects = 5
	// DefaultHostTimeout bounds a whole visit. Hanging and trickling hosts
	// are cut earlier by ConnectTimeout and RequestTimeout, so what needs
	// HostTimeout is a visit of several requests that must wait: a
	// Crawl-delay of a second between each, a redirect chain past the
	// limiter's burst, a redirect target shared with other visits. 8 s
	// gives those room on a loaded machine without slowing a crawl: the
	// end of a run is set by the shorter timeouts, not by this (docs/performance.md
	// gives the figures).
	DefaultHostTimeout = 8 * time.Second
	// DefaultConnectTimeout bounds connecting and the TLS handshake, each
	// time the visit connects. A host that accepts connections but never
	// answers the handshake is the commonest hang; it is given up after
	// this, well before HostTimeout.
	DefaultConnectTimeout = 3 * time.Second
	// DefaultRequestTimeout bounds each HTTP request, from sending it to
	// the last byte of the body read. A server trickling its answer a byte
	// at a time is given up after this rather than after HostTimeout; a
	// slow but honest server still has several seconds for 512 KiB.
	DefaultRequestTimeout = 4 * time.Second
)

// DefaultWorkers is the number of visits a crawl should run at once, the
// `spyder run --concurrency` default, chosen with BenchmarkCrawl (the
// figures are in docs/performance.md). Most visits wait on the network,
// Crawl-delay or the limiter, so the CPU needs about a thousand of them in
// flight to stay busy; past that it thrashes.
const DefaultWorkers = 1024

// DefaultExcludeTLDs are the top-level domains visited by DNS only.
var DefaultExcludeTLDs = []string{"gov", "mil", "int"}

// defaultDialer connects when Config.Dial is nil. It turns TCP keep-alive
// off: a visit's connections live seconds, shorter than any keep-alive
// probe interval, and setting it up costs four system calls per
// connection.
var defaultDialer = &net.Dialer{KeepAlive: -1}

// Limiter spaces out requests per key; [spyder/limiter.Local] is one. Wait
// returns an error (ctx's, or the limiter's once closed) instead of blocking
// past cancellation.
type Limiter interface {
	Wait(ctx context.Context, key string) error
}

// Config configures a [Crawler]. The zero value crawls the internet with the
// system resolver, the system roots and the defaults above.
type Config struct {
	// Resolver is the DNS server, or a comma-separated list of them,
	// each "host:port", a bare IP (port 53) or "[IPv6]:port" (see
	// [resolver.ParseServers]); "" means every nameserver of
	// /etc/resolv.conf. Lookups are spread over the servers in turn; one
	// that stops answering is set aside for [resolver.Cooldown].
	Resolver string
	// Dial connects to "ip:port" addresses; nil means a net.Dialer without
	// TCP keep-alive. Only addresses that passed the private-address guard
	// are passed to it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// RootCAs verifies certificates; nil means the system roots. A
	// certificate that does not verify is still recorded.
	RootCAs *x509.CertPool
	// UserAgent is sent with every request; "" means
	// "spyder/<Version> (+<ProjectURL>)".
	UserAgent string
	// ExcludeTLDs are top-level domains visited by DNS only; nil means
	// [DefaultExcludeTLDs], an empty non-nil slice excludes none.
	ExcludeTLDs []string
	// AllowPrivate lets the crawler connect to non-public addresses
	// (loopback, private, link-local, metadata, unique-local).
	AllowPrivate bool
	// Limiter is waited on before every HTTP request; nil means no limit.
	Limiter Limiter
	// MaxRate bounds the HTTP requests to all hosts together, and apart
	// from them the DNS queries to all resolvers together, per second; 0
	// means no bound. Each request waits for it after Limiter.
	MaxRate float64
	// LimitKey maps a request's host and the address dialed to the
	// limiter's key; nil means the host.
	LimitKey func(host string, ip netip.Addr) string
	// BodyCap bounds how much of a page is read; 0 means DefaultBodyCap.
	BodyCap int64
	// MaxRedirects bounds the redirects followed for the page; 0 means
	// DefaultMaxRedirects, a negative value none.
	MaxRedirects int
	// HostTimeout bounds a whole visit; 0 means DefaultHostTimeout.
	HostTimeout time.Duration
	// ConnectTimeout bounds each connect plus TLS handshake; 0 means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// RequestTimeout bounds each HTTP request including its body (not the
	// waits for the limiter and Crawl-delay before it); 0 means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// DNSTimeout bounds each DNS query attempt; 0 means
	// resolver.DefaultTimeout.
	DNSTimeout time.Duration
	// DNSRetries is how many times a query that timed out is sent again;
	// 0 means resolver.DefaultRetries, a negative value none.
	DNSRetries int
	// Now is the clock, for timestamps, certificate verification and
	// when a resolver set aside is tried again; nil means time.Now.
	Now func() time.Time
	// ProbeID and RunID are stamped on every edge.
	ProbeID, RunID string
	// ASN, when set, gives each IP node its AS number, organisation and
	// announced prefix, and an IN_AS edge to "AS<number>".
	ASN *asn.DB
}

// robots.txt cache bounds: hosts remembered, and for how long (RFC 9309
// asks not to use a copy older than a day).
const (
	robotsCacheSize = 4096
	robotsCacheTTL  = 12 * time.Hour
)

// New returns a Crawler for cfg, filling its defaults.
func New(cfg Config) (*Crawler, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	res, err := resolver.New(resolver.Config{Servers: cfg.Resolver, Timeout: cfg.DNSTimeout, Retries: cfg.DNSRetries, Now: cfg.Now, Rate: cfg.MaxRate})
	if err != nil {
		return nil, err
	}
	c := &Crawler{
		cfg:        cfg,
		resolver:   res,
		robots:     newRobotsCache(robotsCacheSize, robotsCacheTTL),
		verified:   newVerifyCache(),
		exclude:    make(map[string]bool),
		reqHeaders: requestHeaders(cfg.UserAgent),
	}
	if cfg.MaxRate > 0 {
		c.total = rate.NewLimiter(rate.Limit(cfg.MaxRate), max(int(math.Ceil(cfg.MaxRate)), 1))
	}
	for _, t := range cfg.ExcludeTLDs {
		c.exclude[strings.ToLower(strings.Trim(strings.TrimSpace(t), "."))] = true
	}
	return c, nil
}

// withDefaults returns cfg with every field left zero (or, for the bounds,
// not positive) set to its default, as the [Config] fields document. The
// only error is no resolver given and none found in /etc/resolv.conf.
func withDefaults(cfg Config) (Config, error) {
	if cfg.Dial == nil {
		cfg.Dial = defaultDialer.DialContext
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "spyder/" + spyder.Version + " (+" + spyder.ProjectURL + ")"
	}
	if cfg.ExcludeTLDs == nil {
		cfg.ExcludeTLDs = DefaultExcludeTLDs
	}
	if cfg.LimitKey == nil {
		cfg.LimitKey = func(host string, _ netip.Addr) string { return host }
	}
	cfg.BodyCap = positiveOr(cfg.BodyCap, DefaultBodyCap)
	cfg.MaxRedirects = countOr(cfg.MaxRedirects, DefaultMaxRedirects)
	cfg.HostTimeout = positiveOr(cfg.HostTimeout, DefaultHostTimeout)
	cfg.ConnectTimeout = positiveOr(cfg.ConnectTimeout, DefaultConnectTimeout)
	cfg.RequestTimeout = positiveOr(cfg.RequestTimeout, DefaultRequestTimeout)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg, nil
}

// positiveOr returns v, or def when v is zero or negative: for the sizes
// and timeouts, where only a positive value is a setting.
func positiveOr[T int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// countOr returns v for a count where 0 means the default and a negative
// value means none: def for 0, 0 for a negative v.
func countOr(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}
