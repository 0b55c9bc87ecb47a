package crawltest

import (
	"fmt"
	mrand "math/rand/v2"
	"net/netip"
	"strings"

	"golang.org/x/net/publicsuffix"

	"spyder/queue"
)

// rrs are the records owned by one DNS name.
type rrs struct {
	a, aaaa []netip.Addr
	cname   string   // lowercase, no trailing dot
	ns      []string // as published (case may vary), no trailing dot
	mx      []mxRec
	txt     [][]string
}

type mxRec struct {
	pref uint16
	host string // "." for a null MX
}

// ipRole is what a world address does when dialed.
type ipRole int

const (
	ipServe   ipRole = iota + 1 // the HTTPS/HTTP servers
	ipHang                      // accepts and never answers
	ipDown                      // connection refused
	ipTrickle                   // accepts, then sends a byte a second forever
)

// plan is the generated world: names, records, sites and certificates.
type plan struct {
	opts  Options
	ca    *ca
	names map[string]*rrs // owner (lowercase, no dot) → records
	sites map[string]*site
	ips   map[netip.Addr]ipRole
	certs []*certSpec
	seeds []string
	kinds map[string]string // host → what the generator made of it (DNS side)

	hostile  []string        // Options.Hostile: hosts to probe besides the seeds
	silent   map[string]bool // names the DNS server never answers
	manyLink int             // links of the 100k-links page before the cap
}

// The address pools. All are documentation ranges: public for the crawler's
// private-address guard, never routed anywhere.
var (
	servePool4 = [][3]byte{{192, 0, 2}, {198, 51, 100}, {203, 0, 113}}
	hangIPs    = []string{"203.0.113.240", "203.0.113.241", "203.0.113.242", "203.0.113.243"}
	downIPs    = []string{"203.0.113.250", "203.0.113.251", "198.51.100.250", "192.0.2.250"}
	privateIPs = []string{
		"10.1.2.3", "10.200.0.7", "192.168.1.10", "172.16.5.4", "172.31.255.1",
		"127.0.0.1", "169.254.169.254", "100.64.1.1", "0.0.0.0",
	}
	private6 = []string{"fc00::1", "fd12:3456::1", "::1", "fe80::1"}
)

var words = []string{
	"amber", "birch", "cobalt", "delta", "ember", "fable", "garnet", "harbor",
	"indigo", "juniper", "kestrel", "lumen", "maple", "nimbus", "orchid", "pepper",
	"quartz", "raven", "saffron", "tundra", "umber", "velvet", "willow", "zephyr",
}

// gen carries the generator state; every choice comes from r, in order.
type gen struct {
	r *mrand.Rand
	p *plan
	n int // unique name counter

	landing []string // good non-seed sites that pages redirect to
	blocked []string // non-seed sites whose robots.txt blocks spyder
	loops   []string // non-seed sites redirecting to each other forever
}

func newPlan(o Options) (*plan, error) {
	if o.Hosts < 0 {
		return nil, fmt.Errorf("negative host count %d", o.Hosts)
	}
	r := mrand.New(mrand.NewPCG(uint64(o.Seed), 0x637261776c746573))
	p := &plan{
		opts:   o,
		names:  make(map[string]*rrs),
		sites:  make(map[string]*site),
		ips:    make(map[netip.Addr]ipRole),
		kinds:  make(map[string]string),
		silent: make(map[string]bool),
	}
	var err error
	if p.ca, err = newCA(r); err != nil {
		return nil, err
	}
	g := &gen{r: r, p: p}
	g.addresses()
	g.infrastructure()
	for len(p.seeds) < o.Hosts {
		g.seed(o.Hosts - len(p.seeds))
	}
	r.Shuffle(len(p.seeds), func(i, j int) { p.seeds[i], p.seeds[j] = p.seeds[j], p.seeds[i] })
	for _, h := range sortedKeys(p.sites) {
		g.links(p.sites[h])
	}
	if o.Hostile {
		g.hostile()
	}
	if err := g.certificates(); err != nil {
		return nil, err
	}
	return p, nil
}

func (g *gen) addresses() {
	for _, pre := range servePool4 {
		for i := 1; i <= 200; i++ {
			g.p.ips[netip.AddrFrom4([4]byte{pre[0], pre[1], pre[2], byte(i)})] = ipServe
		}
	}
	for i := 1; i <= 200; i++ {
		g.p.ips[serve6(i)] = ipServe
	}
	for _, s := range hangIPs {
		g.p.ips[netip.MustParseAddr(s)] = ipHang
	}
	g.p.ips[netip.MustParseAddr("2001:db8:dead::1")] = ipHang
	for _, s := range downIPs {
		g.p.ips[netip.MustParseAddr(s)] = ipDown
	}
}

func serve6(i int) netip.Addr {
	b := netip.MustParseAddr("2001:db8:1::").As16()
	b[14], b[15] = byte(i>>8), byte(i)
	return netip.AddrFrom16(b)
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }
func (g *gen) pick(xs []string) string {
	return xs[g.r.IntN(len(xs))]
}

// label returns a fresh unique label such as "maple123".
func (g *gen) label() string {
	g.n++
	return fmt.Sprintf("%s%d", g.pick(words), g.n)
}

// suffix picks a public suffix with the mix of the issue.
func (g *gen) suffix() string {
	x := g.r.Float64()
	switch {
	case x < 0.40:
		return "com"
	case x < 0.55:
		return "net"
	case x < 0.70:
		return "org"
	case x < 0.85:
		return "io"
	default:
		return "co.uk"
	}
}

func (g *gen) apexName() string { return g.label() + "." + g.suffix() }

func (p *plan) rr(name string) *rrs {
	r := p.names[name]
	if r == nil {
		r = &rrs{}
		p.names[name] = r
	}
	return r
}

func (g *gen) serveIP() netip.Addr {
	pre := servePool4[g.r.IntN(len(servePool4))]
	return netip.AddrFrom4([4]byte{pre[0], pre[1], pre[2], byte(1 + g.r.IntN(200))})
}

// addrs gives name one or two shared serving addresses, sometimes an AAAA.
func (g *gen) addrs(name string) {
	r := g.p.rr(name)
	r.a = append(r.a, g.serveIP())
	if g.chance(0.3) {
		if b := g.serveIP(); b != r.a[0] {
			r.a = append(r.a, b)
		}
	}
	if g.chance(0.3) {
		r.aaaa = append(r.aaaa, serve6(1+g.r.IntN(200)))
	}
}

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
	for k := 0; k < 8; k++ {
		h := fmt.Sprintf("landing%d.org", k)
		g.apexDNS(h)
		s := g.site(h, true)
		s.page = pageHTML
		g.landing = append(g.landing, h)
	}
	for k := 0; k < 2; k++ {
		h := fmt.Sprintf("walled%d.net", k)
		g.apexDNS(h)
		s := g.site(h, true)
		s.robots = robotsSpyderBlocked
		g.blocked = append(g.blocked, h)
	}
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

func (g *gen) addSeed(host, kind string) {
	g.p.seeds = append(g.p.seeds, host)
	g.p.kinds[host] = kind
}

// seed adds one seed host (two for a CNAME loop when room is left).
func (g *gen) seed(room int) {
	if g.chance(g.p.opts.SlowFraction) {
		g.slowSeed()
		return
	}
	x := g.r.Float64()
	switch {
	case x < 0.10: // a subdomain of a registered domain that may or may not be a seed
		apex := g.apexName()
		g.apexDNS(apex)
		g.site(apex, false)
		if g.chance(0.5) {
			g.addSeed(apex, "apex")
		}
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
	case x < 0.16: // www alias of a registered domain
		apex := g.apexName()
		g.apexDNS(apex)
		g.site(apex, true)
		if g.chance(0.5) {
			g.addSeed(apex, "apex")
		}
		h := "www." + apex
		g.p.rr(h).cname = apex
		s := g.site(h, false)
		if g.chance(0.5) {
			s.page, s.target = pageRedirect, "https://"+apex+"/"
		}
		g.addSeed(h, "www-cname")
	case x < 0.19: // alias to a CDN, two hops
		apex := g.apexName()
		g.apexDNS(apex)
		h := "static." + apex
		k := g.r.IntN(8)
		mid := fmt.Sprintf("%s.c%d.cdn%d.net", strings.ReplaceAll(apex, ".", "-"), g.n, k)
		g.p.rr(h).cname = mid
		g.p.rr(mid).cname = fmt.Sprintf("edge.cdn%d.net", k)
		g.site(h, false)
		g.addSeed(h, "cdn-cname")
	case x < 0.20 && room >= 2: // CNAME loop between two seeds
		a, b := "loop."+g.apexName(), "loop."+g.apexName()
		g.p.rr(a).cname = b
		g.p.rr(b).cname = a
		g.addSeed(a, "cname-loop")
		g.addSeed(b, "cname-loop")
	case x < 0.205:
		h := "self." + g.apexName()
		g.p.rr(h).cname = h
		g.addSeed(h, "cname-self")
	case x < 0.21:
		h := "dangling." + g.apexName()
		g.p.rr(h).cname = fmt.Sprintf("gone%d.deadcdn.net", g.n)
		g.addSeed(h, "cname-dangling")
	case x < 0.24:
		g.addSeed(fmt.Sprintf("nx-%s.%s", g.label(), g.suffix()), "nxdomain")
	case x < 0.27:
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
	case x < 0.28:
		h := g.apexName()
		g.apexDNS(h)
		r := g.p.rr(h)
		r.a = append([]netip.Addr{netip.MustParseAddr(g.pick(privateIPs))}, r.a...)
		g.site(h, false)
		g.addSeed(h, "private-and-public")
	case x < 0.29:
		h := g.apexName()
		r := g.p.rr(h)
		r.ns = g.nsSet(h)
		r.mx = g.mxSet(h)
		r.txt = g.txtSet(h)
		g.addSeed(h, "no-address")
	case x < 0.32:
		h := g.label() + "." + g.pick([]string{"gov", "mil", "int"})
		g.apexDNS(h)
		g.site(h, false)
		g.addSeed(h, "excluded-tld")
	case x < 0.33:
		h := g.apexName()
		r := g.p.rr(h)
		r.a = []netip.Addr{netip.MustParseAddr(g.pick(downIPs))}
		r.ns = g.nsSet(h)
		g.site(h, false)
		g.addSeed(h, "refused")
	case x < 0.34:
		h := g.apexName()
		r := g.p.rr(h)
		r.a = []netip.Addr{netip.MustParseAddr(g.pick(downIPs)), g.serveIP()}
		r.ns = g.nsSet(h)
		g.site(h, false)
		g.addSeed(h, "refused-then-served")
	case x < 0.345:
		h := g.label() + ".gov.uk" // excluded only by its last label, so not excluded
		g.apexDNS(h)
		g.site(h, false)
		g.addSeed(h, "gov.uk")
	case x < 0.35: // an internationalised name, published in its ASCII form
		g.n++
		h, err := queue.NormalizeHost(fmt.Sprintf("%s%d.%s", g.pick([]string{"münchen", "café", "søster", "ürün"}), g.n, g.suffix()))
		if err != nil {
			panic(err) // the names above are valid
		}
		g.apexDNS(h)
		g.site(h, false)
		g.addSeed(h, "idn")
	default:
		h := g.apexName()
		g.apexDNS(h)
		g.site(h, false)
		g.addSeed(h, "apex")
	}
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

// makeGood turns an existing site into a plain, reachable one, for use as
// a redirect target.
func (g *gen) makeGood(host string) {
	s := g.p.sites[host]
	s.good = true
	s.robots = robotsAllowAll
	s.page = pageHTML
	s.cert = certValid
	s.tlsFail = false
	s.trickle, s.slow = false, false
}

func apexOf(host string) string {
	a, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return host
	}
	return a
}
