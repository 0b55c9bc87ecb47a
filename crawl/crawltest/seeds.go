package crawltest

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/spyder-crawler/spyder/host"
)

// addSeed makes host a seed, remembering what the generator made of it.
func (g *gen) addSeed(host, kind string) {
	g.p.seeds = append(g.p.seeds, host)
	g.p.kinds[host] = kind
}

// seedKind is one row of the draw of a seed host's kind.
type seedKind struct {
	below float64    // taken when the draw is under below and no earlier row was taken
	seeds int        // seeds the row adds; passed over when fewer are wanted
	add   func(*gen) // publishes the host(s) and adds them as seeds
}

// seedKinds are the kinds of seed host by cumulative share of the draw:
// 10% subdomains, 6% www aliases, 3% CDN aliases, then rarer broken or
// guarded names, 65% plain registered domains (apexSeed) past the last row.
var seedKinds = []seedKind{
	{0.10, 1, (*gen).subdomainSeed},
	{0.16, 1, (*gen).wwwSeed},
	{0.19, 1, (*gen).cdnSeed},
	{0.20, 2, (*gen).cnameLoopSeeds},
	{0.205, 1, (*gen).cnameSelfSeed},
	{0.21, 1, (*gen).cnameDanglingSeed},
	{0.24, 1, (*gen).nxdomainSeed},
	{0.27, 1, (*gen).privateSeed},
	{0.28, 1, (*gen).privateAndPublicSeed},
	{0.29, 1, (*gen).noAddressSeed},
	{0.32, 1, (*gen).excludedSeed},
	{0.33, 1, (*gen).refusedSeed},
	{0.34, 1, (*gen).refusedThenServedSeed},
	{0.345, 1, (*gen).govUKSeed},
	{0.35, 1, (*gen).idnSeed},
}

// seed adds one seed host (two for a CNAME loop when room is left): a slow
// one with the share Options.SlowFraction, else one of seedKinds. Every
// choice is drawn from g.r in a fixed order, so the world is a function of
// the options.
func (g *gen) seed(room int) {
	if g.chance(g.p.opts.SlowFraction) {
		g.slowSeed()
		return
	}
	x := g.r.Float64()
	for _, k := range seedKinds {
		if x < k.below && room >= k.seeds {
			k.add(g)
			return
		}
	}
	g.apexSeed()
}

// maybeApexSeed publishes a fresh registered domain with a site (good, or
// drawn) and makes it a seed half the time; it returns the domain, for a
// seed below it.
func (g *gen) maybeApexSeed(good bool) string {
	apex := g.apexName()
	g.apexDNS(apex)
	g.site(apex, good)
	if g.chance(0.5) {
		g.addSeed(apex, "apex")
	}
	return apex
}

// servedSeed publishes host as a registered domain with a drawn site and
// makes it a seed of kind.
func (g *gen) servedSeed(host, kind string) {
	g.apexDNS(host)
	g.site(host, false)
	g.addSeed(host, kind)
}

// subdomainSeed adds a subdomain of a registered domain that may or may not
// be a seed; some are delegated with their own NS, some redirect to the
// registered domain, which is then kept reachable.
func (g *gen) subdomainSeed() {
	apex := g.maybeApexSeed(false)
	h := g.pick([]string{"blog", "shop", "api", "docs", "news"}) + "." + apex
	g.addrs(h)
	if g.chance(0.15) {
		g.p.rr(h).ns = g.nsSet(apex) // a delegated subdomain with its own NS
	}
	s := g.site(h, false)
	if g.chance(0.3) {
		s.page, s.target = pageRedirect, "https://"+apex+"/"
		g.makeGood(apex)
	}
	g.addSeed(h, "subdomain")
}

// wwwSeed adds www.X, a CNAME to the registered domain X, whose page
// sometimes redirects to X.
func (g *gen) wwwSeed() {
	apex := g.maybeApexSeed(true)
	h := "www." + apex
	g.p.rr(h).cname = apex
	s := g.site(h, false)
	if g.chance(0.5) {
		s.page, s.target = pageRedirect, "https://"+apex+"/"
	}
	g.addSeed(h, "www-cname")
}

// cdnSeed adds static.X, aliased in two hops to a shared CDN edge.
func (g *gen) cdnSeed() {
	apex := g.apexName()
	g.apexDNS(apex)
	h := "static." + apex
	k := g.r.IntN(8)
	mid := fmt.Sprintf("%s.c%d.cdn%d.net", strings.ReplaceAll(apex, ".", "-"), g.n, k)
	g.p.rr(h).cname = mid
	g.p.rr(mid).cname = fmt.Sprintf("edge.cdn%d.net", k)
	g.site(h, false)
	g.addSeed(h, "cdn-cname")
}

// cnameLoopSeeds adds two seeds whose CNAMEs point at each other.
func (g *gen) cnameLoopSeeds() {
	a, b := "loop."+g.apexName(), "loop."+g.apexName()
	g.p.rr(a).cname = b
	g.p.rr(b).cname = a
	g.addSeed(a, "cname-loop")
	g.addSeed(b, "cname-loop")
}

// cnameSelfSeed adds a name whose CNAME is itself.
func (g *gen) cnameSelfSeed() {
	h := "self." + g.apexName()
	g.p.rr(h).cname = h
	g.addSeed(h, "cname-self")
}

// cnameDanglingSeed adds a name whose CNAME points outside the world.
func (g *gen) cnameDanglingSeed() {
	h := "dangling." + g.apexName()
	g.p.rr(h).cname = fmt.Sprintf("gone%d.deadcdn.net", g.n)
	g.addSeed(h, "cname-dangling")
}

// nxdomainSeed adds a name the world does not hold.
func (g *gen) nxdomainSeed() {
	g.addSeed(fmt.Sprintf("nx-%s.%s", g.label(), g.suffix()), "nxdomain")
}

// privateSeed adds a name with only private addresses (one or two IPv4,
// sometimes an IPv6), NS and MX. Its site is served, but a correct crawler
// never connects.
func (g *gen) privateSeed() {
	h := g.apexName()
	r := g.p.rr(h)
	r.a = append(r.a, netip.MustParseAddr(g.pick(privateIPs)))
	if g.chance(0.4) {
		r.a = append(r.a, netip.MustParseAddr(g.pick(privateIPs)))
	}
	if g.chance(0.3) {
		r.aaaa = append(r.aaaa, netip.MustParseAddr(g.pick(private6)))
	}
	r.ns = g.nsSet(h)
	r.mx = g.mxSet(h)
	g.site(h, false) // served, but a correct crawler never connects
	g.addSeed(h, "private")
}

// privateAndPublicSeed adds a registered domain whose first address is
// private: the crawler must skip it and connect to a public one.
func (g *gen) privateAndPublicSeed() {
	h := g.apexName()
	g.apexDNS(h)
	r := g.p.rr(h)
	r.a = append([]netip.Addr{netip.MustParseAddr(g.pick(privateIPs))}, r.a...)
	g.site(h, false)
	g.addSeed(h, "private-and-public")
}

// noAddressSeed adds a name with NS, MX and TXT records but no address.
func (g *gen) noAddressSeed() {
	h := g.apexName()
	r := g.p.rr(h)
	r.ns = g.nsSet(h)
	r.mx = g.mxSet(h)
	r.txt = g.txtSet(h)
	g.addSeed(h, "no-address")
}

// excludedSeed adds a served name under .gov, .mil or .int: a trap, as
// those are probed by DNS only.
func (g *gen) excludedSeed() {
	h := g.label() + "." + g.pick([]string{"gov", "mil", "int"})
	g.servedSeed(h, "excluded-tld")
}

// refusedSeed adds a name whose only address refuses connections.
func (g *gen) refusedSeed() {
	h := g.apexName()
	r := g.p.rr(h)
	r.a = []netip.Addr{netip.MustParseAddr(g.pick(downIPs))}
	r.ns = g.nsSet(h)
	g.site(h, false)
	g.addSeed(h, "refused")
}

// refusedThenServedSeed adds a name whose first address refuses and whose
// second serves it.
func (g *gen) refusedThenServedSeed() {
	h := g.apexName()
	r := g.p.rr(h)
	r.a = []netip.Addr{netip.MustParseAddr(g.pick(downIPs)), g.serveIP()}
	r.ns = g.nsSet(h)
	g.site(h, false)
	g.addSeed(h, "refused-then-served")
}

// govUKSeed adds a name under gov.uk: excluded only by its last label, so
// not excluded.
func (g *gen) govUKSeed() {
	h := g.label() + ".gov.uk" // excluded only by its last label, so not excluded
	g.servedSeed(h, "gov.uk")
}

// idnSeed adds an internationalised name, published in its ASCII form.
func (g *gen) idnSeed() {
	g.n++
	h, err := host.Parse(fmt.Sprintf("%s%d.%s", g.pick([]string{"münchen", "café", "søster", "ürün"}), g.n, g.suffix()))
	if err != nil {
		panic(err) // the names above are valid
	}
	g.servedSeed(string(h), "idn")
}

// apexSeed adds a plain registered domain, the commonest seed.
func (g *gen) apexSeed() {
	g.servedSeed(g.apexName(), "apex")
}

// slowSeed adds a host that hangs, trickles robots.txt forever, or sends
// its page slowly but completely.
func (g *gen) slowSeed() {
	h := g.apexName()
	switch g.r.IntN(3) {
	case 0:
		r := g.p.rr(h)
		r.a = []netip.Addr{netip.MustParseAddr(g.pick(hangIPs))}
		if g.chance(0.3) {
			r.aaaa = []netip.Addr{netip.MustParseAddr("2001:db8:dead::1")}
		}
		r.ns = g.nsSet(h)
		r.mx = g.mxSet(h)
		g.site(h, false)
		g.addSeed(h, "hang")
	case 1:
		g.apexDNS(h)
		s := g.site(h, false)
		s.trickle = true
		g.addSeed(h, "trickle-forever")
	default:
		g.apexDNS(h)
		s := g.site(h, true)
		s.slow = true
		g.addSeed(h, "slow")
	}
}
