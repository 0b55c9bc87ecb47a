package crawl

import (
	"context"
	"net/netip"
	"slices"

	"golang.org/x/time/rate"

	"github.com/spyder-crawler/spyder"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/resolver"
)

// Crawler visits hosts. It is safe for concurrent use: one Crawler serves
// every worker, sharing its robots.txt cache.
type Crawler struct {
	cfg      Config
	resolver *resolver.Client
	robots   *robotsCache
	verified *verifyCache
	exclude  map[string]bool
	// reqHeaders ends every request (see requestHeaders).
	reqHeaders string
	total      *rate.Limiter // Config.MaxRate over all hosts; nil: no bound
}

// Resolver returns the DNS client the crawler looks hosts up with, for its
// statistics and checks.
func (c *Crawler) Resolver() *resolver.Client { return c.resolver }

// UserAgent returns the user agent the crawler sends.
func (c *Crawler) UserAgent() string { return c.cfg.UserAgent }

// Visit runs every step on h and returns what it found: the DNS records
// (A, AAAA, NS, CNAME, MX, TXT), the certificate of the first TLS
// connection, robots.txt, then the page "/" and its redirects and links.
// It never returns nil and never takes longer than HostTimeout: a step still
// running then ends with status "timeout", keeping what earlier steps found.
// Cancelling ctx ends the visit the same way.
func (c *Crawler) Visit(ctx context.Context, h host.Name) *spyder.Result {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HostTimeout)
	defer cancel()
	p := &visit{c: c, host: h}
	p.run(ctx)
	return p.finish()
}

// visit is the state of one Probe call. It is kept while the visit waits
// on the network, thousands at once, so it holds what the visit found in
// the smallest form at hand: the DNS answers themselves rather than the
// nodes and edges they become, which finish builds; the Result only once
// the visit is over.
type visit struct {
	c     *Crawler
	host  host.Name
	steps [len(stepOrder)]stepEnd // by stepOrder; status is "" until recorded
	// resolvers are the DNS step's counts, when a resolver failed.
	resolvers []spyder.ResolverCounts

	dns        *resolver.Answer // the answers about the host, once recorded (see recordDNS)
	edges      []spyder.Edge    // after those of dns
	certs      []spyder.CertNode
	discovered []host.Name
}

// set records how step ended; the first record of a step stands, so a
// later, vaguer reason (a timeout, "step not reached") never overwrites it.
func (p *visit) set(step, status, detail string) {
	i := slices.Index(stepOrder[:], step)
	if p.steps[i].status != "" {
		return
	}
	p.steps[i] = stepEnd{status, detail}
}

// stepEnd is how a step ended, as a visit keeps it: a [spyder.StepOutcome]
// without the step's name, which is its place in stepOrder.
type stepEnd struct{ status, detail string }

// stepOrder is the order of the steps in a visit and in its outcome.
var stepOrder = [...]string{spyder.StepDNS, spyder.StepTLS, spyder.StepRobots, spyder.StepPage}

// setRest gives every step not yet recorded the same status: the reason it
// did not run.
func (p *visit) setRest(status, detail string) {
	for _, s := range stepOrder {
		p.set(s, status, detail)
	}
}

// edge records an edge from the visited host.
func (p *visit) edge(typ, target string) {
	p.edges = append(p.edges, spyder.Edge{Type: typ, Source: string(p.host), Target: target})
}

// run visits host: it looks it up, records the DNS step, then fetches over
// HTTPS unless policy or the answers rule it out. Every path out of run has
// recorded the steps it stopped before.
func (p *visit) run(ctx context.Context) {
	ans := p.c.resolver.LookupAll(ctx, p.host)
	p.setDNS(ans)
	if ans.Status == spyder.StatusNXDomain {
		p.setRest(spyder.StatusNXDomain, "")
		return
	}
	p.recordDNS(ans)

	if p.c.excluded(p.host) {
		p.setRest(spyder.StatusExcluded, "")
		return
	}
	if ctx.Err() != nil {
		p.setRest(spyder.StatusTimeout, "")
		return
	}
	if len(ans.Addrs) == 0 {
		p.setRest(noAddress(ans))
		return
	}
	addrs := p.c.dialable(ans.Addrs)
	if len(addrs) == 0 {
		p.setRest(spyder.StatusPrivateAddress, "")
		return
	}
	p.fetch(ctx, addrs)
}

// noAddress is the status and detail of the steps after a lookup that
// found no address: the lookup's own failure when it failed outright
// (a lame delegation times out or fails at the resolver: the host's
// addresses are unknown, not absent), else no_address.
func noAddress(ans *resolver.Answer) (string, string) {
	switch ans.Status {
	case spyder.StatusTimeout, spyder.StatusServFail, spyder.StatusError:
		return ans.Status, "dns lookup failed"
	}
	return spyder.StatusNoAddress, ""
}

// setDNS records the dns step, with the resolvers' counts when one of
// them failed at some query.
func (p *visit) setDNS(ans *resolver.Answer) {
	p.set(spyder.StepDNS, ans.Status, ans.Detail)
	for _, c := range ans.Resolvers {
		if c.Failed() {
			p.resolvers = ans.Resolvers
			return
		}
	}
}

// recordDNS keeps the answers about the visited host, for finish to turn
// into nodes and edges (see dnsGraph), and discovers the targets of its
// CNAME, NS and MX records now, so they come before the hosts the page
// leads to. A CNAME to the host itself is not discovered.
func (p *visit) recordDNS(ans *resolver.Answer) {
	p.dns = ans
	if ans.CNAME != "" {
		p.discover(ans.CNAME)
	}
	for _, ns := range ans.NS {
		p.discover(ns)
	}
	for _, mx := range ans.MX {
		p.discover(mx)
	}
}

// dnsGraph returns what the answers about the visited host make: its domain
// node (with its TXT), an IP node and RESOLVES_TO edge per address, and
// ALIAS_OF, USES_NS and USES_MX edges. A CNAME to the host itself gives no
// edge: a host is never its own alias. The edges have room for room more.
func (p *visit) dnsGraph(ans *resolver.Answer, room int) (spyder.DomainNode, []spyder.IPNode, []spyder.Edge) {
	ips := make([]spyder.IPNode, 0, len(ans.Addrs))
	edges := make([]spyder.Edge, 0, 2*len(ans.Addrs)+1+len(ans.NS)+len(ans.MX)+room)
	edge := func(typ, target string) {
		edges = append(edges, spyder.Edge{Type: typ, Source: string(p.host), Target: target})
	}
	for _, ip := range ans.Addrs {
		n, as := p.ipNode(ip)
		edge(spyder.ResolvesTo, n.IP)
		if as != "" {
			edges = append(edges, spyder.Edge{Type: spyder.InAS, Source: n.IP, Target: as})
		}
		ips = append(ips, n)
	}
	if ans.CNAME != "" && ans.CNAME != p.host {
		edge(spyder.AliasOf, string(ans.CNAME))
	}
	for _, ns := range ans.NS {
		edge(spyder.UsesNS, string(ns))
	}
	for _, mx := range ans.MX {
		edge(spyder.UsesMX, string(mx))
	}
	return spyder.DomainNode{Host: p.host, TXT: ans.TXT}, ips, edges
}

// ipNode is the node of address a: with an ASN database, annotated with
// its AS, whose node it also returns for an IN_AS edge from a ("" when a
// has no AS).
func (p *visit) ipNode(a netip.Addr) (spyder.IPNode, string) {
	n := spyder.IPNode{IP: a.String()}
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

// discover adds h to the hosts found, once, unless it is the visited host.
func (p *visit) discover(h host.Name) {
	if h != p.host && !slices.Contains(p.discovered, h) {
		p.discovered = append(p.discovered, h)
	}
}

// finish returns the visit's result: the steps, the nodes and edges of
// the DNS answers (see dnsGraph) before the others, nodes for edge
// targets, timestamps and IDs.
func (p *visit) finish() *spyder.Result {
	p.setRest(spyder.StatusError, "step not reached")
	now := p.c.cfg.Now().Unix()
	r := &spyder.Result{Host: p.host, Certs: p.certs, Discovered: p.discovered}
	r.Outcome.Steps = make([]spyder.StepOutcome, len(stepOrder))
	for i, s := range p.steps {
		r.Outcome.Steps[i] = spyder.StepOutcome{Step: stepOrder[i], Status: s.status, Detail: s.detail}
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
		if spyder.ToDomain(e.Type) {
			targets++
		}
	}
	r.Domains = slices.Grow(r.Domains, targets)
	seenDomain := make(map[host.Name]bool, len(r.Domains)+targets)
	for _, d := range r.Domains {
		seenDomain[d.Host] = true
	}
	for _, e := range r.Edges {
		if t := host.Name(e.Target); spyder.ToDomain(e.Type) && !seenDomain[t] {
			seenDomain[t] = true
			r.Domains = append(r.Domains, spyder.DomainNode{Host: t})
		}
	}
	for i := range r.Domains {
		d := &r.Domains[i]
		d.Apex, d.FirstSeen, d.LastSeen = d.Host.Apex(), now, now
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
