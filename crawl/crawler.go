package crawl

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"spyder/queue"
)

// Version is spyder's version, as the default user agent gives it.
var Version = "0.1.0"

// ProjectURL is the address the default user agent points site owners to.
const ProjectURL = "https://github.com/spyder-crawler/spyder"

// Defaults for the [Config] fields left zero.
const (
	DefaultBodyCap      = 512 << 10
	DefaultMaxRedirects = 5
	// DefaultHostTimeout bounds a whole probe. Hanging and trickling hosts
	// are cut earlier by ConnectTimeout and RequestTimeout, so what needs
	// HostTimeout is a probe of several requests that must wait: a
	// Crawl-delay of a second between each, a redirect chain past the
	// limiter's burst, a redirect target shared with other probes. 8 s
	// gives those room on a loaded machine; measured with 1,024 workers,
	// 5 s, 6 s and 8 s crawled 611, 582 and 594 hosts/s (within the
	// noise): the end of a run is set by the shorter timeouts, not by this.
	DefaultHostTimeout = 8 * time.Second
	// DefaultConnectTimeout bounds connecting and the TLS handshake, each
	// time the probe connects. A host that accepts connections but never
	// answers the handshake is the commonest hang; it is given up after
	// this, well before HostTimeout.
	DefaultConnectTimeout = 3 * time.Second
	// DefaultRequestTimeout bounds each HTTP request, from sending it to
	// the last byte of the body read. A server trickling its answer a byte
	// at a time is given up after this rather than after HostTimeout; a
	// slow but honest server still has several seconds for 512 KiB.
	DefaultRequestTimeout = 4 * time.Second
	DefaultDNSTimeout     = 2 * time.Second
	DefaultDNSRetries     = 2
)

// DefaultWorkers is the number of probes a crawl should run at once, the
// `spyder run --concurrency` default, chosen by measurement (BenchmarkCrawl,
// 10,000 hosts, 20 ms DNS and 50 ms HTTP latency, 3% slow hosts, 2 cores):
// 256 workers crawled 362 hosts/s, 512 482, 1,024 557–611 and 2,048 453
// (the CPU then thrashes), with the crawler's peak RSS 48, 63, 90 and 150
// MiB. Most probes wait on the network, Crawl-delay or the limiter, so the
// CPU needs about a thousand of them in flight to stay busy.
const DefaultWorkers = 1024

// DefaultExcludeTLDs are the top-level domains probed by DNS only.
var DefaultExcludeTLDs = []string{"gov", "mil", "int"}

// Limiter spaces out requests per key; [spyder/limiter.Local] is one. Wait
// returns an error (ctx's, or the limiter's once closed) instead of blocking
// past cancellation.
type Limiter interface {
	Wait(ctx context.Context, key string) error
}

// Config configures a [Crawler]. The zero value crawls the internet with the
// system resolver, the system roots and the defaults above.
type Config struct {
	// Resolver is the DNS server's "ip:port"; "" means the first
	// nameserver of /etc/resolv.conf.
	Resolver string
	// Dial connects to "ip:port" addresses; nil means a net.Dialer. Only
	// addresses that passed the private-address guard are passed to it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// RootCAs verifies certificates; nil means the system roots. A
	// certificate that does not verify is still recorded.
	RootCAs *x509.CertPool
	// UserAgent is sent with every request; "" means
	// "spyder/<Version> (+<ProjectURL>)".
	UserAgent string
	// ExcludeTLDs are top-level domains probed by DNS only; nil means
	// [DefaultExcludeTLDs], an empty non-nil slice excludes none.
	ExcludeTLDs []string
	// AllowPrivate lets the crawler connect to non-public addresses
	// (loopback, private, link-local, metadata, unique-local).
	AllowPrivate bool
	// Limiter is waited on before every HTTP request; nil means no limit.
	Limiter Limiter
	// LimitKey maps a request's host and the address dialed to the
	// limiter's key; nil means the host.
	LimitKey func(host string, ip netip.Addr) string
	// BodyCap bounds how much of a page is read; 0 means DefaultBodyCap.
	BodyCap int64
	// MaxRedirects bounds the redirects followed for the page; 0 means
	// DefaultMaxRedirects, a negative value none.
	MaxRedirects int
	// HostTimeout bounds a whole probe; 0 means DefaultHostTimeout.
	HostTimeout time.Duration
	// ConnectTimeout bounds each connect plus TLS handshake; 0 means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// RequestTimeout bounds each HTTP request including its body (not the
	// waits for the limiter and Crawl-delay before it); 0 means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// DNSTimeout bounds each DNS query attempt; 0 means DefaultDNSTimeout.
	DNSTimeout time.Duration
	// DNSRetries is how many times a query that timed out is sent again;
	// 0 means DefaultDNSRetries, a negative value none.
	DNSRetries int
	// Now is the clock, for timestamps and certificate verification; nil
	// means time.Now.
	Now func() time.Time
	// ProbeID and RunID are stamped on every edge.
	ProbeID, RunID string
}

// Crawler probes hosts. It is safe for concurrent use: one Crawler serves
// every worker, sharing its robots.txt cache.
type Crawler struct {
	cfg      Config
	resolver *resolver
	robots   *robotsCache
	exclude  map[string]bool
}

// robots.txt cache bounds: hosts remembered, and for how long (RFC 9309
// asks not to use a copy older than a day).
const (
	robotsCacheSize = 4096
	robotsCacheTTL  = 12 * time.Hour
)

// New returns a Crawler for cfg, filling its defaults.
func New(cfg Config) (*Crawler, error) {
	if cfg.Resolver == "" {
		r, err := systemResolver()
		if err != nil {
			return nil, err
		}
		cfg.Resolver = r
	}
	if _, _, err := net.SplitHostPort(cfg.Resolver); err != nil {
		return nil, fmt.Errorf("resolver %q: %w", cfg.Resolver, err)
	}
	if cfg.Dial == nil {
		d := &net.Dialer{}
		cfg.Dial = d.DialContext
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "spyder/" + Version + " (+" + ProjectURL + ")"
	}
	if cfg.ExcludeTLDs == nil {
		cfg.ExcludeTLDs = DefaultExcludeTLDs
	}
	if cfg.LimitKey == nil {
		cfg.LimitKey = func(host string, _ netip.Addr) string { return host }
	}
	if cfg.BodyCap <= 0 {
		cfg.BodyCap = DefaultBodyCap
	}
	switch {
	case cfg.MaxRedirects == 0:
		cfg.MaxRedirects = DefaultMaxRedirects
	case cfg.MaxRedirects < 0:
		cfg.MaxRedirects = 0
	}
	if cfg.HostTimeout <= 0 {
		cfg.HostTimeout = DefaultHostTimeout
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.DNSTimeout <= 0 {
		cfg.DNSTimeout = DefaultDNSTimeout
	}
	switch {
	case cfg.DNSRetries == 0:
		cfg.DNSRetries = DefaultDNSRetries
	case cfg.DNSRetries < 0:
		cfg.DNSRetries = 0
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Crawler{
		cfg:      cfg,
		resolver: newResolver(cfg.Resolver, cfg.DNSTimeout, cfg.DNSRetries),
		robots:   newRobotsCache(robotsCacheSize, robotsCacheTTL),
		exclude:  make(map[string]bool),
	}
	for _, t := range cfg.ExcludeTLDs {
		c.exclude[strings.ToLower(strings.Trim(strings.TrimSpace(t), "."))] = true
	}
	return c, nil
}

// UserAgent returns the user agent the crawler sends.
func (c *Crawler) UserAgent() string { return c.cfg.UserAgent }

// Result is what probing one host found: its nodes and edges, how each step
// ended, and the hosts it discovered. Nodes and edges are not deduplicated
// across results; a [Batcher] does that.
type Result struct {
	Host    string
	Domains []DomainNode
	IPs     []IPNode
	Certs   []CertNode
	Edges   []Edge
	// Outcome has one entry per step, in the order dns, tls, robots, page.
	Outcome ProbeOutcome
	// Discovered lists the other hosts found (name servers, mail
	// exchangers, the CNAME target, linked and redirect hosts), for a
	// continuous crawl to enqueue.
	Discovered []string
}

// Steps of a probe, as [StepOutcome.Step] names them.
const (
	StepDNS    = "dns"
	StepTLS    = "tls"
	StepRobots = "robots"
	StepPage   = "page"
)

// Step statuses other than "http_<code>".
const (
	StatusOK               = "ok"
	StatusNXDomain         = "nxdomain"
	StatusTimeout          = "timeout"
	StatusExcluded         = "excluded"
	StatusPrivateAddress   = "private_address"
	StatusNoAddress        = "no_address"
	StatusConnectError     = "connect_error"
	StatusTLSError         = "tls_error"
	StatusUnverified       = "unverified"
	StatusRobotsBlocked    = "robots_blocked"
	StatusNotHTML          = "not_html"
	StatusTooManyRedirects = "too_many_redirects"
	StatusInvalidHost      = "invalid_host"
	StatusError            = "error"
)

// Probe runs every step of DESIGN.md §1 on host and returns what it found.
// It never returns nil and never takes longer than HostTimeout: a step still
// running then ends with status "timeout", keeping what earlier steps found.
// Cancelling ctx ends the probe the same way.
func (c *Crawler) Probe(ctx context.Context, host string) *Result {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HostTimeout)
	defer cancel()
	p := &probe{c: c, res: &Result{Host: host}}
	p.run(ctx, host)
	p.finish()
	return p.res
}

// probe is the state of one Probe call.
type probe struct {
	c     *Crawler
	res   *Result
	host  string
	steps map[string]StepOutcome
	now   int64

	edges      []Edge
	domains    []DomainNode // probed host first
	ips        []IPNode
	certs      []CertNode
	discovered []string
}

func (p *probe) set(step, status, detail string) {
	if p.steps == nil {
		p.steps = make(map[string]StepOutcome)
	}
	if _, done := p.steps[step]; done {
		return
	}
	p.steps[step] = StepOutcome{Step: step, Status: status, Detail: detail}
}

// setRest gives every step not yet recorded the same status: the reason it
// did not run.
func (p *probe) setRest(status, detail string) {
	for _, s := range []string{StepDNS, StepTLS, StepRobots, StepPage} {
		p.set(s, status, detail)
	}
}

func (p *probe) edge(typ, target string) {
	p.edges = append(p.edges, Edge{Type: typ, Source: p.host, Target: target})
}

func (p *probe) run(ctx context.Context, input string) {
	host, err := queue.NormalizeHost(input)
	if err != nil {
		p.setRest(StatusInvalidHost, err.Error())
		return
	}
	p.host = host
	p.res.Host = host

	ans := p.c.resolver.lookupAll(ctx, host)
	if ans.status == StatusNXDomain {
		p.setRest(StatusNXDomain, "")
		return
	}
	p.set(StepDNS, ans.status, ans.detail)
	p.domains = append(p.domains, DomainNode{Host: host, TXT: ans.txt})
	for _, ip := range ans.addrs {
		p.edge(ResolvesTo, ip.String())
		p.ips = append(p.ips, IPNode{IP: ip.String()})
	}
	if ans.cname != "" && ans.cname != host {
		p.edge(AliasOf, ans.cname)
		p.discover(ans.cname)
	}
	for _, ns := range ans.ns {
		p.edge(UsesNS, ns)
		p.discover(ns)
	}
	for _, mx := range ans.mx {
		p.edge(UsesMX, mx)
		p.discover(mx)
	}

	if p.c.excluded(host) {
		p.setRest(StatusExcluded, "")
		return
	}
	if ctx.Err() != nil {
		p.setRest(StatusTimeout, "")
		return
	}
	if len(ans.addrs) == 0 {
		p.setRest(StatusNoAddress, "")
		return
	}
	addrs := p.c.dialable(ans.addrs)
	if len(addrs) == 0 {
		p.setRest(StatusPrivateAddress, "")
		return
	}
	p.fetch(ctx, addrs)
}

func (p *probe) discover(h string) {
	if h != p.host && !slices.Contains(p.discovered, h) {
		p.discovered = append(p.discovered, h)
	}
}

// finish fills the result: nodes for edge targets, timestamps and IDs.
func (p *probe) finish() {
	p.setRest(StatusError, "step not reached")
	now := p.c.cfg.Now().Unix()
	r := p.res
	for _, s := range []string{StepDNS, StepTLS, StepRobots, StepPage} {
		r.Outcome.Steps = append(r.Outcome.Steps, p.steps[s])
	}
	r.Outcome.Host = r.Host
	seenDomain := make(map[string]bool)
	for _, d := range p.domains {
		seenDomain[d.Host] = true
	}
	for _, e := range p.edges {
		switch e.Type {
		case UsesNS, UsesMX, AliasOf, LinksTo:
			if !seenDomain[e.Target] {
				seenDomain[e.Target] = true
				p.domains = append(p.domains, DomainNode{Host: e.Target})
			}
		}
	}
	for i := range p.domains {
		d := &p.domains[i]
		d.Apex, d.FirstSeen, d.LastSeen = Apex(d.Host), now, now
	}
	for i := range p.ips {
		p.ips[i].FirstSeen, p.ips[i].LastSeen = now, now
	}
	for i := range p.edges {
		e := &p.edges[i]
		e.ObservedAt, e.ProbeID, e.RunID = now, p.c.cfg.ProbeID, p.c.cfg.RunID
	}
	r.Domains, r.IPs, r.Certs, r.Edges, r.Discovered = p.domains, p.ips, p.certs, p.edges, p.discovered
}

// excluded reports whether host's top-level domain is excluded.
func (c *Crawler) excluded(host string) bool {
	tld := host[strings.LastIndexByte(host, '.')+1:]
	return c.exclude[tld]
}

// dialable returns the addresses the crawler may connect to: the public
// ones, or all of them with AllowPrivate.
func (c *Crawler) dialable(addrs []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if c.cfg.AllowPrivate || IsPublic(a) {
			out = append(out, a)
		}
	}
	return out
}

// cgnat is the shared address space of RFC 6598, used behind carrier NAT.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// IsPublic reports whether a may be connected to without AllowPrivate: it
// is none of loopback, private (RFC 1918, unique-local fc00::/7), carrier NAT
// (100.64.0.0/10), link-local (including the cloud metadata address
// 169.254.169.254), unspecified, multicast, "this network" (0.0.0.0/8) or
// broadcast. Documentation ranges count as public.
func IsPublic(a netip.Addr) bool {
	a = a.Unmap()
	switch {
	case !a.IsValid(), a.IsLoopback(), a.IsPrivate(), a.IsLinkLocalUnicast(),
		a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast(), a.IsMulticast(),
		a.IsUnspecified(), cgnat.Contains(a):
		return false
	case a.Is4():
		b := a.As4()
		return b[0] != 0 && a != netip.AddrFrom4([4]byte{255, 255, 255, 255})
	}
	return true
}

// errNoAddress reports that a redirect target has no address to dial.
var errNoAddress = errors.New("crawl: no public address")
