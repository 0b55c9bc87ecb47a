package crawltest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"time"
)

// The hostile hosts of Options.Hostile, with the step and status a correct
// probe of each ends with (see World.HostileOutcome).
const (
	hostTrickle     = "trickle.hostile-byte.com"
	hostNeverCloses = "open.hostile-never-closes.com"
	hostGigabyte    = "big.hostile-gigabyte.com"
	hostManyLinks   = "links.hostile-many-links.com"
	hostRedirect50  = "hops.hostile-redirects.com"
	hostDNS1000     = "many.hostile-dns-records.com"
	hostSANs        = "sans.hostile-certificate.com"
	hostInvalidUTF8 = "bad\xffhost.hostile-utf8.com"
	hostCNAMELoop   = "a.hostile-cname-loop.com"
	hostCNAMEChain  = "chain0.hostile-cname-chain.com"
	hostSilentDNS   = "silent.hostile-dns.com"
	hostLameAlias   = "alias.hostile-lame-target.com"
)

var hostileOutcomes = map[string]string{
	hostTrickle:     "tls:timeout",
	hostNeverCloses: "page:timeout",
	hostGigabyte:    "page:ok",
	hostManyLinks:   "page:ok",
	hostRedirect50:  "page:too_many_redirects",
	hostDNS1000:     "page:ok",
	hostSANs:        "page:ok",
	hostInvalidUTF8: "dns:invalid_host",
	hostCNAMELoop:   "page:no_address",
	hostCNAMEChain:  "page:ok",
	hostSilentDNS:   "dns:timeout",
	hostLameAlias:   "page:servfail", // its addresses are unknown, not absent
}

const (
	gigabyte      = 1 << 30
	manyLinks     = 100_000
	sansCount     = 10_000
	dnsRecords    = 1000
	chainLength   = 30
	trickleIPAddr = "192.0.2.240"
)

// hostile adds the hostile hosts. Apart from the trickling one they are
// ordinary sites with extraordinary pages, names or certificates.
func (g *gen) hostile() {
	p := g.p
	g.p.ips[netip.MustParseAddr(trickleIPAddr)] = ipTrickle
	add := func(h string) *site {
		p.hostile = append(p.hostile, h)
		p.kinds[h] = "hostile"
		if h == hostInvalidUTF8 {
			return nil
		}
		r := p.rr(h)
		r.ns = []string{"ns1.dnsprov0.net", "ns2.dnsprov0.net"}
		if h == hostCNAMELoop || h == hostCNAMEChain || h == hostSilentDNS || h == hostLameAlias {
			return nil
		}
		r.a = []netip.Addr{g.serveIP()}
		s := g.site(h, true)
		g.links(s)
		return s
	}
	add(hostTrickle)
	p.rr(hostTrickle).a = []netip.Addr{netip.MustParseAddr(trickleIPAddr)}
	s := add(hostNeverCloses)
	s.page, s.robots = pageNeverCloses, robots404
	add(hostGigabyte).page = pageGigabyte
	s = add(hostManyLinks)
	s.page = pageManyLinks
	s.linkHosts = manyLinkHosts()
	add(hostRedirect50).page = pageRedirect50
	add(hostDNS1000)
	r := p.rr(hostDNS1000)
	for i := 1; i <= dnsRecords; i++ {
		a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 3, 14: byte(i >> 8), 15: byte(i)})
		r.aaaa = append(r.aaaa, a)
		p.ips[a] = ipServe
	}
	add(hostSANs).sans = sansCount
	add(hostInvalidUTF8)

	add(hostCNAMELoop)
	b, c := "b.hostile-cname-loop.com", "c.hostile-cname-loop.com"
	p.rr(hostCNAMELoop).cname, p.rr(b).cname, p.rr(c).cname = b, c, hostCNAMELoop
	p.rr(hostCNAMELoop).ns = nil // a name with a CNAME has no other records

	add(hostCNAMEChain)
	p.rr(hostCNAMEChain).ns = nil
	prev := hostCNAMEChain
	for i := 1; i <= chainLength; i++ {
		n := fmt.Sprintf("chain%d.hostile-cname-chain.com", i)
		p.rr(prev).cname = n
		prev = n
	}
	p.rr(prev).a = []netip.Addr{g.serveIP()}
	g.links(g.site(hostCNAMEChain, true))

	add(hostSilentDNS)
	p.silent[hostSilentDNS] = true

	// A resolver that cannot reach an alias's target answers SERVFAIL to
	// every question of the alias but the one its own zone answers.
	add(hostLameAlias)
	p.rr(hostLameAlias).cname = "www.lame-zone.net"
	p.rr(hostLameAlias).ns = nil
	p.lame[hostLameAlias] = true
}

// manyLinksBody is the 100,000-link page: links to distinct hosts up to
// 16 KiB before the cap, filler past it, then the rest. It starts with a
// link whose host is not valid UTF-8.
func manyLinksBody() ([]byte, int) {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html><html><body>\n<a href=\"https://bad\xffhost.com/\">bad</a>\n")
	i := 0
	for ; i < manyLinks && b.Len() < bodyCap-16<<10; i++ {
		fmt.Fprintf(&b, "<a href=\"https://l%d.many-links.com/\">%d</a>\n", i, i)
	}
	before := i
	for b.Len() < bodyCap+16<<10 {
		b.WriteString("<p>filler past the cap</p>\n")
	}
	for ; i < manyLinks; i++ {
		fmt.Fprintf(&b, "<a href=\"https://l%d.many-links.com/\">%d</a>\n", i, i)
	}
	b.WriteString("</body></html>\n")
	return b.Bytes(), before
}

// manyLinkHosts are the hosts of the 100,000-link page's links before the
// cap, sorted: the ones a correct probe credits it with.
func manyLinkHosts() []string {
	_, n := manyLinksBody()
	out := make([]string, n)
	for i := range out {
		out[i] = "l" + strconv.Itoa(i) + ".many-links.com"
	}
	sort.Strings(out)
	return out
}

// serveHostile writes the hostile pages; it reports false for other sites.
func (w *World) serveHostile(rw http.ResponseWriter, r *http.Request, s *site) bool {
	if r.URL.Path != "/" {
		return false
	}
	ctx := r.Context()
	switch s.page {
	case pageGigabyte:
		page := []byte(s.pageBody())
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.Header().Set("Content-Length", strconv.Itoa(gigabyte))
		rw.WriteHeader(http.StatusOK)
		rw.Write(page)
		chunk := bytes.Repeat([]byte("<p>and on and on</p>\n"), 3200) // 67,200 bytes
		for left := gigabyte - len(page); left > 0 && ctx.Err() == nil; {
			n := min(left, len(chunk))
			if _, err := rw.Write(chunk[:n]); err != nil {
				return true
			}
			left -= n
		}
	case pageManyLinks:
		body, _ := manyLinksBody()
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
		rw.WriteHeader(http.StatusOK)
		rw.Write(body)
	case pageNeverCloses:
		c, brw, err := http.NewResponseController(rw).Hijack()
		if err != nil {
			return true
		}
		w.srv.track(c)
		defer w.srv.forget(c)
		brw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<!DOCTYPE html><html><body><p>this never ends")
		brw.Flush()
		buf := make([]byte, 512)
		for {
			if _, err := c.Read(buf); err != nil {
				return true
			}
		}
	default:
		return false
	}
	return true
}

// trickle accepts connections and sends the start of a TLS record one
// byte a second, forever: a handshake that never completes.
func (w *World) trickle(ln net.Listener) {
	w.acceptEach(ln, w.trickleRecord)
}

// trickleRecord writes to c the header of a 16 KiB TLS handshake record,
// then zeros, one byte a second, until the client goes away or the world
// stops.
func (w *World) trickleRecord(c net.Conn) {
	record := []byte{0x16, 0x03, 0x03, 0x40, 0x00} // handshake record of 16 KiB
	for i := 0; ; i++ {
		b := byte(0)
		if i < len(record) {
			b = record[i]
		}
		if _, err := c.Write([]byte{b}); err != nil {
			return
		}
		t := time.NewTimer(time.Second)
		select {
		case <-t.C:
		case <-w.done:
			t.Stop()
			return
		}
	}
}
