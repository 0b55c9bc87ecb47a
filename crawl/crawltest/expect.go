package crawltest

import (
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"time"

	"spyder/crawl"
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

// expected computes the edges of a correct crawl of the seeds.
func (p *plan) expected() []crawl.Edge {
	set := make(map[crawl.Edge]bool)
	for _, h := range p.seeds {
		p.expectHost(h, func(typ, target string) {
			set[crawl.Edge{Type: typ, Source: h, Target: target}] = true
		})
	}
	out := make([]crawl.Edge, 0, len(set))
	for e := range set {
		out = append(out, e)
	}
	sortEdges(out)
	return out
}

func (p *plan) expectHost(h string, add func(typ, target string)) {
	r := p.names[h]
	if r == nil {
		return // NXDOMAIN
	}
	if r.cname != "" && r.cname != h {
		add(crawl.AliasOf, r.cname)
	}
	addrs := p.lookup(h)
	for _, a := range addrs {
		add(crawl.ResolvesTo, a.String())
	}
	for _, ns := range r.ns {
		add(crawl.UsesNS, normName(ns))
	}
	for _, mx := range r.mx {
		if mx.host != "." {
			add(crawl.UsesMX, normName(mx.host))
		}
	}
	if excludedTLDs[h[strings.LastIndexByte(h, '.')+1:]] {
		return
	}
	if !p.reachable(addrs) {
		return
	}
	s := p.sites[h]
	if s == nil || s.tlsFail {
		return
	}
	add(crawl.UsesCert, s.spec.spki)
	if s.trickle || robotsVariants[s.robots].blocked {
		return
	}
	apex := apexOf(h)
	for _, l := range p.follow(h) {
		if apexOf(l) != apex {
			add(crawl.LinksTo, l)
		}
	}
}

// reachable reports whether a crawler connecting to the public addresses in
// turn gets an answer: some address serves and none hangs (the generator
// never mixes the two, so the order does not matter).
func (p *plan) reachable(addrs []netip.Addr) bool {
	serve := false
	for _, a := range addrs {
		if !public(a) {
			continue
		}
		switch p.ips[a] {
		case ipHang:
			return false
		case ipServe:
			serve = true
		}
	}
	return serve
}

// follow fetches "/" of host as the contract says (redirects, robots.txt of
// each new host) and returns the link hosts of the final page, or nil.
func (p *plan) follow(host string) []string {
	u, _ := url.Parse("https://" + host + "/")
	checked := map[string]bool{host: true}
	for hop := 0; ; hop++ {
		h := u.Hostname()
		s := p.sites[h]
		if s == nil || !p.reachable(p.lookup(h)) || (u.Scheme == "https" && s.tlsFail) || s.trickle {
			return nil
		}
		if !checked[h] {
			checked[h] = true
			if robotsVariants[s.robots].blocked {
				return nil
			}
		}
		rt := s.route(u.EscapedPath())
		if rt.location != "" {
			if hop+1 > maxRedirects {
				return nil
			}
			next, err := u.Parse(rt.location)
			if err != nil {
				return nil
			}
			u = next
			continue
		}
		if rt.status/100 == 2 && rt.html {
			return s.linkHosts
		}
		return nil
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
