package crawltest

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
)

// The contract's defaults that Expected assumes.
const maxRedirects = 5

var excludedTLDs = map[string]bool{"gov": true, "mil": true, "int": true}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// public reports whether the crawler may dial a: not loopback, private,
// CGNAT, link-local, unique-local, unspecified or multicast. The
// documentation ranges the world uses count as public.
func public(a netip.Addr) bool {
	a = a.Unmap()
	return !(a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || cgnat.Contains(a))
}

// normName is the contract's normalisation of NS/MX/CNAME targets.
func normName(s string) string { return strings.TrimSuffix(strings.ToLower(s), ".") }

// lookup returns the addresses an A and an AAAA query for name answer,
// following the CNAME chain as the DNS server does.
func (p *plan) lookup(name string) []netip.Addr {
	seen := map[string]bool{}
	for {
		r := p.names[name]
		if r == nil || seen[name] {
			return nil
		}
		seen[name] = true
		if r.cname != "" {
			name = r.cname
			continue
		}
		return append(append([]netip.Addr(nil), r.a...), r.aaaa...)
	}
}

// expected computes the edges of a correct crawl of the seeds, the page
// outcome of each seed and the certificate nodes behind USES_CERT.
func (p *plan) expected() ([]spyder.Edge, map[string]string, []spyder.CertNode) {
	return p.expectedFor(p.seeds)
}

// expectedFor is expected for any list of hosts.
func (p *plan) expectedFor(hosts []string) ([]spyder.Edge, map[string]string, []spyder.CertNode) {
	set := make(map[spyder.Edge]bool)
	outcomes := make(map[string]string, len(hosts))
	certs := make(map[string]*certSpec)
	for _, h := range hosts {
		outcomes[h] = p.expectHost(h, func(e spyder.Edge) { set[e] = true })
		if s := p.sites[h]; s != nil && s.spec != nil && set[spyder.Edge{Type: spyder.UsesCert, Source: h, Target: s.spec.spki}] {
			certs[s.spec.spki] = s.spec
		}
	}
	edges := make([]spyder.Edge, 0, len(set))
	for e := range set {
		edges = append(edges, e)
	}
	sortEdges(edges)
	var nodes []spyder.CertNode
	for _, spki := range sortedKeys(certs) {
		nodes = append(nodes, certs[spki].node(p.ca))
	}
	return edges, outcomes, nodes
}

// expectedHostile computes the edges a correct probe of each hostile host
// emits, and the step and status it ends with.
func (p *plan) expectedHostile() ([]spyder.Edge, map[string]string) {
	set := make(map[spyder.Edge]bool)
	for _, h := range p.hostile {
		st := p.expectHost(h, func(e spyder.Edge) { set[e] = true })
		if want := hostileOutcomes[h]; !strings.HasSuffix(want, ":"+st) {
			panic(fmt.Sprintf("crawltest: hostile %s plans %s, computes %s", h, want, st))
		}
	}
	edges := make([]spyder.Edge, 0, len(set))
	for e := range set {
		edges = append(edges, e)
	}
	sortEdges(edges)
	return edges, hostileOutcomes
}

// expectHost adds the edges of a correct probe of h and returns the status
// its page step ends with.
func (p *plan) expectHost(h string, addEdge func(spyder.Edge)) string {
	add := func(typ, target string) { addEdge(spyder.Edge{Type: typ, Source: h, Target: target}) }
	if _, err := host.Parse(h); err != nil {
		return "invalid_host"
	}
	if p.silent[h] {
		return "timeout"
	}
	r := p.names[h]
	if r == nil {
		return "nxdomain"
	}
	if r.cname != "" && r.cname != h {
		add(spyder.AliasOf, r.cname)
	}
	addrs := p.lookup(h)
	for _, a := range addrs {
		add(spyder.ResolvesTo, a.String())
	}
	for _, ns := range r.ns {
		add(spyder.UsesNS, normName(ns))
	}
	for _, mx := range r.mx {
		if mx.host != "." {
			add(spyder.UsesMX, normName(mx.host))
		}
	}
	if excludedTLDs[h[strings.LastIndexByte(h, '.')+1:]] {
		return "excluded"
	}
	if len(addrs) == 0 && p.lame[h] {
		return "servfail" // the lookup failed: its addresses are unknown, not absent
	}
	if len(addrs) == 0 {
		return "no_address"
	}
	if !slices.ContainsFunc(addrs, public) {
		return "private_address"
	}
	if st := p.reach(addrs); st != "" {
		return st
	}
	s := p.sites[h]
	if s == nil || s.tlsFail {
		return "tls_error"
	}
	add(spyder.UsesCert, s.spec.spki)
	if s.trickle {
		return "timeout"
	}
	if robotsVariants[s.robots].blocked {
		return "robots_blocked"
	}
	links, st := p.follow(h, addEdge)
	apex := apexOf(h)
	for _, l := range links {
		if apexOf(l) != apex {
			add(spyder.LinksTo, l)
		}
	}
	return st
}

// reach says how connecting to the public addresses in turn ends: "" when
// one serves, "timeout" when one hangs (the generator never mixes the two,
// so the order does not matter), "connect_error" when all refuse.
func (p *plan) reach(addrs []netip.Addr) string {
	st := "connect_error"
	for _, a := range addrs {
		if !public(a) {
			continue
		}
		switch p.ips[a] {
		case ipHang, ipTrickle:
			return "timeout"
		case ipServe:
			st = ""
		}
	}
	return st
}

// follow fetches "/" of host as the contract says (redirects, robots.txt of
// each new host) and returns the link hosts of the final page and the
// page step's status. Each redirect hop within maxRedirects to another
// registrable domain is a REDIRECTS_TO edge from the hop's host, given to
// add; the links are the probed host's.
func (p *plan) follow(host string, add func(spyder.Edge)) ([]string, string) {
	u, _ := url.Parse("https://" + host + "/")
	checked := map[string]bool{host: true}
	for hop := 0; ; hop++ {
		h := u.Hostname()
		s := p.sites[h]
		switch {
		case p.names[h] == nil || len(p.lookup(h)) == 0:
			return nil, "no_address"
		case p.reach(p.lookup(h)) != "":
			return nil, p.reach(p.lookup(h))
		case s == nil || (u.Scheme == "https" && s.tlsFail):
			return nil, "tls_error"
		case s.trickle, s.page == pageNeverCloses:
			return nil, "timeout"
		}
		if !checked[h] {
			checked[h] = true
			if robotsVariants[s.robots].blocked {
				return nil, "robots_blocked"
			}
		}
		rt := s.route(u.EscapedPath())
		if rt.location != "" {
			if hop+1 > maxRedirects {
				return nil, "too_many_redirects"
			}
			next, err := u.Parse(rt.location)
			if err != nil {
				return nil, "error"
			}
			if to := next.Hostname(); apexOf(to) != apexOf(h) {
				add(spyder.Edge{Type: spyder.RedirectsTo, Source: h, Target: to})
			}
			u = next
			continue
		}
		switch {
		case rt.status/100 != 2:
			return nil, fmt.Sprintf("http_%d", rt.status)
		case !rt.html:
			return nil, "not_html"
		}
		return s.linkHosts, "ok"
	}
}

func (p *plan) blockedHosts() []string {
	var out []string
	for h, s := range p.sites {
		if robotsVariants[s.robots].blocked {
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}

func (p *plan) crawlDelays() map[string]time.Duration {
	out := make(map[string]time.Duration)
	for h, s := range p.sites {
		if d := robotsVariants[s.robots].delay; d > 0 {
			out[h] = d
		}
	}
	return out
}

func (p *plan) describe(host string) string {
	var b strings.Builder
	if k := p.kinds[host]; k != "" {
		fmt.Fprintf(&b, "seed kind=%s; ", k)
	}
	r := p.names[host]
	if r == nil {
		b.WriteString("dns: NXDOMAIN")
	} else {
		fmt.Fprintf(&b, "dns: a=%v aaaa=%v cname=%q ns=%v mx=%v resolves=%v", r.a, r.aaaa, r.cname, r.ns, r.mx, p.lookup(host))
	}
	if s := p.sites[host]; s != nil {
		b.WriteString("; site: " + s.describe())
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
