package crawltest

import (
	"fmt"
	"strings"
)

// infrastructure creates the shared name servers, mail hosts and CDN edges,
// and the non-seed sites pages redirect to.
func (g *gen) infrastructure() {
	for k := 0; k < 8; k++ {
		for _, n := range []string{"ns1", "ns2"} {
			g.addrs(fmt.Sprintf("%s.dnsprov%d.net", n, k))
		}
		for _, n := range []string{"mx1", "mx2"} {
			g.addrs(fmt.Sprintf("%s.mailprov%d.com", n, k))
		}
		edge := fmt.Sprintf("edge.cdn%d.net", k)
		g.addrs(edge)
	}
	g.landing = g.targetSites("landing%d.org", 8, func(s *site) { s.page = pageHTML })
	g.blocked = g.targetSites("walled%d.net", 2, func(s *site) { s.robots = robotsSpyderBlocked })
	for k := 0; k < 2; k++ {
		a, b := fmt.Sprintf("pingpong%da.com", k), fmt.Sprintf("pingpong%db.com", k)
		g.apexDNS(a)
		g.apexDNS(b)
		sa, sb := g.site(a, true), g.site(b, true)
		sa.page, sa.target = pageRedirect, "https://"+b+"/"
		sb.page, sb.target = pageRedirect, "https://"+a+"/"
		g.loops = append(g.loops, a)
	}
}

// targetSites publishes n registered domains named by format (given 0 to
// n-1), each with a good site that set then adjusts, and returns their
// names in order: the redirect targets seeds' pages point to. Each domain's
// records and site are drawn before the next one's, so the world stays a
// function of the seed.
func (g *gen) targetSites(format string, n int, set func(*site)) []string {
	var hosts []string
	for k := 0; k < n; k++ {
		h := fmt.Sprintf(format, k)
		g.apexDNS(h)
		set(g.site(h, true))
		hosts = append(hosts, h)
	}
	return hosts
}

// nsSet returns the name servers of apex: a provider's pair (sometimes
// published in upper case) or the apex's own, which then get addresses.
func (g *gen) nsSet(apex string) []string {
	if g.chance(0.75) {
		k := g.r.IntN(8)
		ns := []string{fmt.Sprintf("ns1.dnsprov%d.net", k), fmt.Sprintf("ns2.dnsprov%d.net", k)}
		if g.chance(0.1) {
			ns[0] = strings.ToUpper(ns[0])
		}
		return ns
	}
	ns := []string{"ns1." + apex, "ns2." + apex}
	for _, n := range ns {
		g.addrs(n)
	}
	return ns
}

// mxSet returns the mail exchangers of apex: a provider's pair (the second
// sometimes in upper case), its own mail host (which then gets addresses),
// a null MX, or none.
func (g *gen) mxSet(apex string) []mxRec {
	x := g.r.Float64()
	switch {
	case x < 0.5:
		k := g.r.IntN(8)
		mx := []mxRec{{10, fmt.Sprintf("mx1.mailprov%d.com", k)}, {20, fmt.Sprintf("mx2.mailprov%d.com", k)}}
		if g.chance(0.1) {
			mx[1].host = strings.ToUpper(mx[1].host)
		}
		return mx
	case x < 0.7:
		g.addrs("mail." + apex)
		return []mxRec{{5, "mail." + apex}}
	case x < 0.8:
		return []mxRec{{0, "."}} // null MX (RFC 7505)
	default:
		return nil
	}
}

// txtSet returns the TXT records of apex: sometimes an SPF record, a
// two-string verification record and a DKIM key longer than one string.
func (g *gen) txtSet(apex string) [][]string {
	var txt [][]string
	if g.chance(0.6) {
		txt = append(txt, []string{fmt.Sprintf("v=spf1 include:_spf.mailprov%d.com ~all", g.r.IntN(8))})
	}
	if g.chance(0.3) {
		txt = append(txt, []string{"site-verification=" + apex, " part=2"})
	}
	if g.chance(0.1) {
		long := strings.Repeat("k", 255)
		txt = append(txt, []string{"v=DKIM1; p=" + long[:243], long[:100]})
	}
	return txt
}

// apexDNS publishes a registered domain: addresses, NS, MX and TXT.
func (g *gen) apexDNS(host string) {
	g.addrs(host)
	r := g.p.rr(host)
	r.ns = g.nsSet(host)
	r.mx = g.mxSet(host)
	r.txt = g.txtSet(host)
}
