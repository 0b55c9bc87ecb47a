package crawl

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"strings"

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
	StatusServFail         = "servfail"
	StatusPartial          = "partial" // the DNS step: some queries failed
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

// Statuses are the statuses a step can end with, other than "http_<code>".
var Statuses = []string{
	StatusOK, StatusNXDomain, StatusServFail, StatusPartial, StatusTimeout, StatusExcluded,
	StatusPrivateAddress, StatusNoAddress, StatusConnectError, StatusTLSError,
	StatusUnverified, StatusRobotsBlocked, StatusNotHTML, StatusTooManyRedirects,
	StatusInvalidHost, StatusError,
}

// IsStatus reports whether s is a status a step can end with: one of
// [Statuses] or "http_" and a three-digit code.
func IsStatus(s string) bool {
	if code, ok := strings.CutPrefix(s, "http_"); ok {
		n, err := strconv.Atoi(code)
		return err == nil && len(code) == 3 && n >= 100
	}
	return slices.Contains(Statuses, s)
}

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
	p := &probe{c: c, host: input}
	p.setRest(StatusInvalidHost, err.Error())
	return p.finish()
}

// ProbeHost runs every step on h and returns what it found: the DNS records
// (A, AAAA, NS, CNAME, MX, TXT), the certificate of the first TLS
// connection, robots.txt, then the page "/" and its redirects and links.
// It never returns nil and never takes longer than HostTimeout: a step still
// running then ends with status "timeout", keeping what earlier steps found.
// Cancelling ctx ends the probe the same way.
func (c *Crawler) ProbeHost(ctx context.Context, h host.Name) *Result {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HostTimeout)
	defer cancel()
	p := &probe{c: c, host: string(h)}
	p.run(ctx)
	return p.finish()
}

// probe is the state of one Probe call. It is kept while the probe waits
// on the network, thousands at once, so it holds what the probe found in
// the smallest form at hand: the DNS answers themselves rather than the
// nodes and edges they become, which finish builds; the Result only once
// the probe is over.
type probe struct {
	c     *Crawler
	host  string
	steps [len(stepOrder)]stepEnd // by stepOrder; status is "" until recorded
	// resolvers are the DNS step's counts, when a resolver failed.
	resolvers []ResolverCounts

	dns        *dnsAnswer // the answers about the host, once recorded (see recordDNS)
	edges      []Edge     // after those of dns
	certs      []CertNode
	discovered []host.Name
}

// set records how step ended; the first record of a step stands, so a
// later, vaguer reason (a timeout, "step not reached") never overwrites it.
func (p *probe) set(step, status, detail string) {
	i := slices.Index(stepOrder[:], step)
	if p.steps[i].status != "" {
		return
	}
	p.steps[i] = stepEnd{status, detail}
}

// stepEnd is how a step ended, as a probe keeps it: a [StepOutcome]
// without the step's name, which is its place in stepOrder.
type stepEnd struct{ status, detail string }

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
func (p *probe) run(ctx context.Context) {
	host := p.host
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
			p.resolvers = ans.resolvers
			return
		}
	}
}

// recordDNS keeps the answers about the probed host, for finish to turn
// into nodes and edges (see dnsGraph), and discovers the targets of its
// CNAME, NS and MX records now, so they come before the hosts the page
// leads to. A CNAME to the host itself is not discovered.
func (p *probe) recordDNS(ans *dnsAnswer) {
	p.dns = ans
	if ans.cname != "" && ans.cname != p.host {
		p.discover(ans.cname)
	}
	for _, ns := range ans.ns {
		p.discover(ns)
	}
	for _, mx := range ans.mx {
		p.discover(mx)
	}
}

// dnsGraph returns what the answers about the probed host make: its domain
// node (with its TXT), an IP node and RESOLVES_TO edge per address, and
// ALIAS_OF, USES_NS and USES_MX edges. A CNAME to the host itself gives no
// edge: a host is never its own alias. The edges have room for room more.
func (p *probe) dnsGraph(ans *dnsAnswer, room int) (DomainNode, []IPNode, []Edge) {
	ips := make([]IPNode, 0, len(ans.addrs))
	edges := make([]Edge, 0, 2*len(ans.addrs)+1+len(ans.ns)+len(ans.mx)+room)
	edge := func(typ, target string) {
		edges = append(edges, Edge{Type: typ, Source: p.host, Target: target})
	}
	for _, ip := range ans.addrs {
		n, as := p.ipNode(ip)
		edge(ResolvesTo, n.IP)
		if as != "" {
			edges = append(edges, Edge{Type: InAS, Source: n.IP, Target: as})
		}
		ips = append(ips, n)
	}
	if ans.cname != "" && ans.cname != p.host {
		edge(AliasOf, ans.cname)
	}
	for _, ns := range ans.ns {
		edge(UsesNS, ns)
	}
	for _, mx := range ans.mx {
		edge(UsesMX, mx)
	}
	return DomainNode{Host: p.host, TXT: ans.txt}, ips, edges
}

// ipNode is the node of address a: with an ASN database, annotated with
// its AS, whose node it also returns for an IN_AS edge from a ("" when a
// has no AS).
func (p *probe) ipNode(a netip.Addr) (IPNode, string) {
	n := IPNode{IP: a.String()}
	if p.c.cfg.ASN == nil {
		return n, ""
	}
	info, ok := p.c.cfg.ASN.Lookup(a)
	if !ok {
		return n, ""
	}
	n.ASN, n.ASOrg, n.Prefix = info.Number, info.Org, info.Prefix.String()
	return n, info.Node()
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

// finish returns the probe's result: the steps, the nodes and edges of
// the DNS answers (see dnsGraph) before the others, nodes for edge
// targets, timestamps and IDs.
func (p *probe) finish() *Result {
	p.setRest(StatusError, "step not reached")
	now := p.c.cfg.Now().Unix()
	r := &Result{Host: p.host, Certs: p.certs, Discovered: p.discovered}
	r.Outcome.Steps = make([]StepOutcome, len(stepOrder))
	for i, s := range p.steps {
		r.Outcome.Steps[i] = StepOutcome{Step: stepOrder[i], Status: s.status, Detail: s.detail}
	}
	r.Outcome.Steps[0].Resolvers = p.resolvers // StepDNS
	r.Outcome.Host = r.Host
	if p.dns != nil {
		d, ips, edges := p.dnsGraph(p.dns, len(p.edges))
		r.Domains = append(r.Domains, d)
		if len(ips) > 0 {
			r.IPs = ips
		}
		if len(edges) > 0 {
			p.edges = append(edges, p.edges...)
		}
	}
	r.Edges = p.edges
	targets := 0
	for _, e := range r.Edges {
		if toDomain(e.Type) {
			targets++
		}
	}
	r.Domains = slices.Grow(r.Domains, targets)
	seenDomain := make(map[string]bool, len(r.Domains)+targets)
	for _, d := range r.Domains {
		seenDomain[d.Host] = true
	}
	for _, e := range r.Edges {
		if toDomain(e.Type) && !seenDomain[e.Target] {
			seenDomain[e.Target] = true
			r.Domains = append(r.Domains, DomainNode{Host: e.Target})
		}
	}
	for i := range r.Domains {
		d := &r.Domains[i]
		d.Apex, d.FirstSeen, d.LastSeen = Apex(d.Host), now, now
	}
	for i := range r.IPs {
		r.IPs[i].FirstSeen, r.IPs[i].LastSeen = now, now
	}
	for i := range r.Edges {
		e := &r.Edges[i]
		e.ObservedAt, e.ProbeID, e.RunID = now, p.c.cfg.ProbeID, p.c.cfg.RunID
	}
	return r
}

// toDomain reports whether an edge of type typ points at a host, whose
// domain node the result holds.
func toDomain(typ string) bool {
	switch typ {
	case UsesNS, UsesMX, AliasOf, LinksTo, RedirectsTo:
		return true
	}
	return false
}
