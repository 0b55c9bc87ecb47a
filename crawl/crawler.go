package crawl

import (
	"context"
	"net/netip"
	"slices"

	"github.com/spyder-crawler/spyder/host"
)

// Crawler probes hosts. It is safe for concurrent use: one Crawler serves
// every worker, sharing its robots.txt cache.
type Crawler struct {
	cfg      Config
	resolver *resolver
	robots   *robotsCache
	verified *verifyCache
	exclude  map[string]bool
	// reqHeaders ends every request (see requestHeaders).
	reqHeaders string
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
	Discovered []host.Name
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

// Probe parses input as a host name ([host.Parse]) and probes it with
// [Crawler.ProbeHost]; input that is not a host name gives a result whose
// every step is "invalid_host". It is for input that has not entered
// spyder yet; a crawl's loop, whose hosts were parsed as they entered the
// queue, calls ProbeHost.
func (c *Crawler) Probe(ctx context.Context, input string) *Result {
	h, err := host.Parse(input)
	if err != nil {
		return c.invalid(input, err)
	}
	return c.ProbeHost(ctx, h)
}

// invalid is the result of input, which is not a host name (err). It is
// a function of its own so that its probe, which it keeps on its stack,
// does not make the frame of every Probe call the probe's size: a probe
// waits on its server under that frame (see httpConn.readFirst).
//
//go:noinline
func (c *Crawler) invalid(input string, err error) *Result {
	p := &probe{c: c, res: &Result{Host: input}}
	p.setRest(StatusInvalidHost, err.Error())
	p.finish()
	return p.res
}

// ProbeHost runs every step on h and returns what it found: the DNS lookups
// (A, AAAA, NS, CNAME, MX, TXT), the certificate of the first TLS
// connection, robots.txt, then the page "/" and its redirects and links.
// It never returns nil and never takes longer than HostTimeout: a step still
// running then ends with status "timeout", keeping what earlier steps found.
// Cancelling ctx ends the probe the same way.
func (c *Crawler) ProbeHost(ctx context.Context, h host.Name) *Result {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HostTimeout)
	defer cancel()
	p := &probe{c: c, res: &Result{Host: string(h)}}
	p.run(ctx, string(h))
	p.finish()
	return p.res
}

// probe is the state of one Probe call.
type probe struct {
	c     *Crawler
	res   *Result
	host  string
	steps [len(stepOrder)]StepOutcome // by stepOrder; Step is "" until recorded
	now   int64

	edges      []Edge
	domains    []DomainNode // probed host first
	ips        []IPNode
	certs      []CertNode
	discovered []host.Name
}

// set records how step ended; the first record of a step stands, so a
// later, vaguer reason (a timeout, "step not reached") never overwrites it.
func (p *probe) set(step, status, detail string) {
	i := slices.Index(stepOrder[:], step)
	if p.steps[i].Step != "" {
		return
	}
	p.steps[i] = StepOutcome{Step: step, Status: status, Detail: detail}
}

// stepOrder is the order of the steps in a probe and in its outcome.
var stepOrder = [...]string{StepDNS, StepTLS, StepRobots, StepPage}

// setRest gives every step not yet recorded the same status: the reason it
// did not run.
func (p *probe) setRest(status, detail string) {
	for _, s := range stepOrder {
		p.set(s, status, detail)
	}
}

// edge records an edge from the probed host.
func (p *probe) edge(typ, target string) {
	p.edges = append(p.edges, Edge{Type: typ, Source: p.host, Target: target})
}

// run probes host: it looks it up, records the DNS step, then fetches over
// HTTPS unless policy or the answers rule it out. Every path out of run has
// recorded the steps it stopped before.
func (p *probe) run(ctx context.Context, host string) {
	p.host = host

	ans := p.c.resolver.lookupAll(ctx, host)
	p.setDNS(ans)
	if ans.status == StatusNXDomain {
		p.setRest(StatusNXDomain, "")
		return
	}
	p.recordDNS(ans)

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

// setDNS records the dns step, with the resolvers' counts when one of
// them failed at some query.
func (p *probe) setDNS(ans *dnsAnswer) {
	p.set(StepDNS, ans.status, ans.detail)
	for _, c := range ans.resolvers {
		if c.failed() {
			p.steps[0].Resolvers = ans.resolvers // StepDNS
			return
		}
	}
}

// recordDNS turns the answers about the probed host into its domain node
// (with its TXT), an IP node and RESOLVES_TO edge per address, and ALIAS_OF,
// USES_NS and USES_MX edges whose targets are discovered. A CNAME to the
// host itself gives no edge: a host is never its own alias.
func (p *probe) recordDNS(ans *dnsAnswer) {
	p.domains = append(p.domains, DomainNode{Host: p.host, TXT: ans.txt})
	for _, ip := range ans.addrs {
		p.edge(ResolvesTo, ip.String())
		p.ips = append(p.ips, p.ipNode(ip))
	}
	if ans.cname != "" && ans.cname != p.host {
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
}

// ipNode is the node of address a: with an ASN database, annotated with
// its AS, which also gets an IN_AS edge from a.
func (p *probe) ipNode(a netip.Addr) IPNode {
	n := IPNode{IP: a.String()}
	if p.c.cfg.ASN == nil {
		return n
	}
	if info, ok := p.c.cfg.ASN.Lookup(a); ok {
		n.ASN, n.ASOrg, n.Prefix = info.Number, info.Org, info.Prefix.String()
		p.edges = append(p.edges, Edge{Type: InAS, Source: n.IP, Target: info.Node()})
	}
	return n
}

// discover adds the host named s to the hosts found, once, unless it is
// the probed host. A name from a DNS answer enters spyder here, so it is
// parsed; one that is not a host name is left out.
func (p *probe) discover(s string) {
	h, err := host.Parse(s)
	if err == nil && string(h) != p.host && !slices.Contains(p.discovered, h) {
		p.discovered = append(p.discovered, h)
	}
}

// finish fills the result: nodes for edge targets, timestamps and IDs.
func (p *probe) finish() {
	p.setRest(StatusError, "step not reached")
	now := p.c.cfg.Now().Unix()
	r := p.res
	r.Outcome.Steps = append(r.Outcome.Steps, p.steps[:]...)
	r.Outcome.Host = r.Host
	seenDomain := make(map[string]bool)
	for _, d := range p.domains {
		seenDomain[d.Host] = true
	}
	for _, e := range p.edges {
		switch e.Type {
		case UsesNS, UsesMX, AliasOf, LinksTo, RedirectsTo:
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
