package crawltest

import (
	"fmt"
	mrand "math/rand/v2"
	"net/netip"

	"github.com/spyder-crawler/spyder/host"
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
	lame     map[string]bool // aliases it answers SERVFAIL for, save their CNAME
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
		lame:   make(map[string]bool),
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

// suffix picks a public suffix: com 40% of the time, net, org, io and
// co.uk 15% each.
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

// apexOf is the registrable domain of the world's host name h.
func apexOf(h string) string { return string(host.Name(h).Apex()) }
