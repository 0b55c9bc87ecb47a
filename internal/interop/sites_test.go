package interop

import (
	"fmt"
	"strings"

	"github.com/spyder-crawler/spyder"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"
)

// page is an HTML page linking to each of hrefs.
func page(head string, hrefs ...string) []byte {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head>" + head + "<title>interop</title></head><body>\n")
	for _, h := range hrefs {
		b.WriteString(`<p><a href="` + h + `">a link</a></p>` + "\n")
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

// in encodes s with e.
func in(e encoding.Encoding, s []byte) []byte {
	b, err := e.NewEncoder().Bytes(s)
	if err != nil {
		panic(err)
	}
	return b
}

var (
	allowAll    = Resource{Type: "text/plain", Body: []byte("User-agent: *\nAllow: /\n")}
	disallowAll = []byte("User-agent: *\nDisallow: /\n")
	// bigRobots disallows everything in its first line, then runs past
	// the 500 KiB a crawler must read.
	bigRobots = append(append([]byte{}, disallowAll...), []byte(strings.Repeat("# padding padding padding padding padding padding\n", 12000))...)
)

// linkOnly is a page of allowAll's site linking to each of hosts.
func linkOnly(hosts ...string) Resource {
	var hrefs []string
	for _, h := range hosts {
		hrefs = append(hrefs, "https://"+h+"/")
	}
	return Resource{Body: page("", hrefs...)}
}

// sites is the world's HTTPS sites, one address each, in the order of their
// addresses.
func sites() []*Site {
	return []*Site{
		// nginx
		{Host: "nginx.test", Server: "nginx", Key: RSA2048, Cert: LeafSpec{Names: []string{"nginx.test", "www.nginx.test"}}, Robots: allowAll,
			Page:  Resource{Body: page("", "https://apache.test/", "https://www.lighttpd.test/x", "//haproxy.test/y", "/about", "mailto:a@b.test")},
			Links: []string{"nginx.test", "apache.test", "www.lighttpd.test", "haproxy.test"}, Verified: true},
		{Host: "gz.nginx.test", PageStep: spyder.StatusRobotsBlocked, Server: "nginx", Robots: Resource{Type: "text/plain", Encoding: "gzip", Body: disallowAll},
			Page: linkOnly("invented.test"), Verified: true},
		{Host: "gzpage.nginx.test", Server: "nginx", Robots: allowAll,
			Page: Resource{Encoding: "gzip", Body: page("", "https://gzip-linked.test/")}, Links: []string{"gzip-linked.test"}, Verified: true},
		{Host: "x25519.nginx.test", Server: "nginx", Groups: "X25519", Robots: allowAll, Page: linkOnly("x25519-linked.test"),
			Links: []string{"x25519-linked.test"}, Verified: true},
		{Host: "p384.nginx.test", Server: "nginx", Key: P384, Groups: "secp384r1", Robots: allowAll, Page: linkOnly("p384-linked.test"),
			Links: []string{"p384-linked.test"}, Verified: true},
		{Host: "tls12.nginx.test", Server: "nginx", Key: P384, TLS12: true, Robots: allowAll, Page: linkOnly("tls12-linked.test"),
			Links: []string{"tls12-linked.test"}, Verified: true},
		{Host: "ed25519.nginx.test", Server: "nginx", Key: Ed25519, Robots: allowAll, Page: linkOnly("ed25519-linked.test"),
			Links: []string{"ed25519-linked.test"}, Verified: true},
		{Host: "utf16.nginx.test", Server: "nginx", Robots: allowAll,
			Page:  Resource{Type: "text/html; charset=utf-16", Body: in(unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), page("", "https://utf16-linked.test/"))},
			Links: []string{"utf16-linked.test"}, Verified: true},
		{Host: "r500.nginx.test", PageStep: spyder.StatusRobotsBlocked, Server: "nginx", Robots: Resource{Status: 500}, Page: linkOnly("invented.test"), Verified: true},
		{Host: "big.nginx.test", PageStep: spyder.StatusRobotsBlocked, Server: "nginx", Robots: Resource{Type: "text/plain", Body: bigRobots}, Page: linkOnly("invented.test"), Verified: true},
		{Host: "x448.nginx.test", Server: "nginx", Groups: "X448", Robots: allowAll, Page: linkOnly("invented.test"),
			TLSFail: "no common key exchange group"},
		{Host: "tls10.nginx.test", Server: "nginx", TLS10: true, Robots: allowAll, Page: linkOnly("invented.test"),
			TLSFail: "no common protocol version"},
		{Host: "notype.nginx.test", Server: "nginx", Robots: allowAll, Page: Resource{Type: NoType, Body: page("", "https://notype-linked.test/")},
			Links: []string{"notype-linked.test"}, Verified: true},
		{Host: "xhtml.nginx.test", Server: "nginx", Robots: allowAll,
			Page: Resource{Type: "application/xhtml+xml; charset=utf-8", Body: []byte(`<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title></head><body><a href="https://xhtml-linked.test/">x</a></body></html>`)},
			Links: []string{"xhtml-linked.test"}, Verified: true},
		{Host: "relredir.nginx.test", Server: "nginx", Robots: allowAll, Page: Resource{Status: 307, Location: "/index.html", Body: page("", "https://relredir-linked.test/")},
			Links: []string{"relredir-linked.test"}, Verified: true},
		{Host: "tohttp.nginx.test", Server: "nginx", Robots: allowAll, Page: Resource{Status: 303, Location: "http://plainhop.nginx.test/"},
			Links: []string{"plainhop-linked.test"}, Verified: true},
		{Host: "plainhop.nginx.test", Server: "nginx", HTTP: true, Robots: allowAll, Page: linkOnly("plainhop-linked.test"),
			Links: []string{"plainhop-linked.test"}, Verified: true},
		{Host: "chunked.nginx.test", Server: "nginx", Extra: "  ssi on;\n", Robots: allowAll,
			Page:  Resource{Body: page(`<!--# echo var="host" -->`, "https://chunked-linked.test/")},
			Links: []string{"chunked-linked.test"}, Verified: true},
		{Host: "close.nginx.test", Server: "nginx", Extra: "  keepalive_timeout 0;\n", Robots: allowAll, Page: linkOnly("close-linked.test"),
			Links: []string{"close-linked.test"}, Verified: true},
		{Host: "tls13.nginx.test", Server: "nginx", TLS13: true, Key: RSA4096, Robots: allowAll, Page: linkOnly("tls13-linked.test"),
			Links: []string{"tls13-linked.test"}, Verified: true},
		{Host: "sjis.nginx.test", Server: "nginx", Robots: allowAll,
			Page:  Resource{Type: "text/html; charset=Shift_JIS", Body: in(japanese.ShiftJIS, page("", "http://例え.test/"))},
			Links: []string{"xn--r8jz45g.test"}, Verified: true},
		{Host: "empty.nginx.test", PageStep: spyder.StatusNotHTML, Server: "nginx", Robots: allowAll, Page: Resource{Status: 204}, Verified: true},
		{Host: "nointer.nginx.test", Server: "nginx", Cert: LeafSpec{NoInter: true}, Robots: allowAll, Page: linkOnly("nointer-linked.test"),
			Links: []string{"nointer-linked.test"}},

		// Apache
		{Host: "apache.test", Server: "apache", Key: RSA4096, Robots: allowAll,
			Page:  Resource{Type: "TEXT/HTML; Charset=UTF-8", Body: page(`<base href="https://cdn.lighttpd.test/">`, "a.html", "https://nginx.test/")},
			Links: []string{"cdn.lighttpd.test", "nginx.test"}, Verified: true},
		{Host: "deflate.apache.test", PageStep: spyder.StatusRobotsBlocked, Server: "apache", Robots: Resource{Type: "text/plain", Encoding: "deflate", Body: disallowAll},
			Page: linkOnly("invented.test"), Verified: true},
		{Host: "deflatepage.apache.test", Server: "apache", Robots: allowAll,
			Page: Resource{Encoding: "deflate", Body: page("", "https://deflate-linked.test/")}, Links: []string{"deflate-linked.test"}, Verified: true},
		{Host: "r403.apache.test", Server: "apache", Robots: Resource{Status: 403}, Page: linkOnly("r403-linked.test"),
			Links: []string{"r403-linked.test"}, Verified: true},
		{Host: "p521.apache.test", Server: "apache", Groups: "P-521", Robots: allowAll, Page: linkOnly("p521-linked.test"),
			Links: []string{"p521-linked.test"}, Verified: true},
		{Host: "w1252.apache.test", Server: "apache", Robots: allowAll,
			Page:  Resource{Type: "text/html; charset=windows-1252", Body: in(charmap.Windows1252, page("", "http://bücher.test/"))},
			Links: []string{"xn--bcher-kva.test"}, Verified: true},
		{Host: "redir.apache.test", Server: "apache", Robots: allowAll, Page: Resource{Status: 301, Location: "https://nginx.test/"},
			RedirectsTo: [][2]string{{"redir.apache.test", "nginx.test"}}, Links: []string{"nginx.test", "www.lighttpd.test", "haproxy.test"}, Verified: true},
		{Host: "refresh.apache.test", Server: "apache", Robots: allowAll,
			Page:  Resource{Body: page(`<meta http-equiv="refresh" content="0; url=https://refresh-target.test/">`)},
			Links: []string{"refresh-target.test"}, Verified: true},
		{Host: "ed25519.apache.test", Server: "apache", Key: Ed25519, TLS13: true, Robots: allowAll, Page: linkOnly("ed25519a-linked.test"),
			Links: []string{"ed25519a-linked.test"}, Verified: true},
		{Host: "nointer.apache.test", Server: "apache", Cert: LeafSpec{NoInter: true}, Robots: allowAll, Page: linkOnly("nointera-linked.test"),
			Links: []string{"nointera-linked.test"}},
		{Host: "r503.apache.test", PageStep: spyder.StatusRobotsBlocked, Server: "apache", Robots: Resource{Status: 503}, Page: linkOnly("invented.test"), Verified: true},
		{Host: "br.apache.test", PageStep: spyder.StatusRobotsBlocked, Server: "apache", Robots: Resource{Type: "text/plain", Encoding: "br", Body: disallowAll},
			Page: linkOnly("invented.test"), Verified: true},
		{Host: "tls12rsa.apache.test", Server: "apache", Key: RSA2048, TLS12: true, Groups: "P-384", Robots: allowAll,
			Page: linkOnly("tls12rsa-linked.test"), Links: []string{"tls12rsa-linked.test"}, Verified: true},

		// lighttpd
		{Host: "lighttpd.test", Server: "lighttpd", Groups: "P-256", Robots: allowAll, Page: linkOnly("nginx.test", "apache.test"),
			Links: []string{"nginx.test", "apache.test"}, Verified: true},
		{Host: "br.lighttpd.test", PageStep: spyder.StatusRobotsBlocked, Server: "lighttpd", Robots: Resource{Type: "text/plain", Encoding: "br", Body: disallowAll},
			Page: linkOnly("invented.test"), Verified: true},
		{Host: "brpage.lighttpd.test", Server: "lighttpd", Robots: allowAll,
			Page: Resource{Encoding: "br", Body: page("", "https://br-linked.test/")}, Links: []string{"br-linked.test"}, Verified: true},
		{Host: "sjis.lighttpd.test", Server: "lighttpd", Robots: allowAll,
			Page:  Resource{Body: in(japanese.ShiftJIS, page(`<meta charset="shift_jis">`, "http://日本.test/"))},
			Links: []string{"xn--wgv71a.test"}, Verified: true},
		{Host: "p384.lighttpd.test", Server: "lighttpd", Key: P384, Groups: "P-384:P-521", Robots: allowAll, Page: linkOnly("p384l-linked.test"),
			Links: []string{"p384l-linked.test"}, Verified: true},
		{Host: "tls12.lighttpd.test", Server: "lighttpd", Key: P384, TLS12: true, Robots: allowAll, Page: linkOnly("tls12l-linked.test"),
			Links: []string{"tls12l-linked.test"}, Verified: true},
		{Host: "rredir.lighttpd.test", PageStep: spyder.StatusRobotsBlocked, Server: "lighttpd", Robots: Resource{Status: 301, Location: "https://gz.nginx.test/robots.txt"},
			Page: linkOnly("invented.test"), Verified: true},

		// Caddy (Go's crypto/tls)
		{Host: "caddy.test", Server: "caddy", Robots: allowAll, Page: linkOnly("h2o.test", "nginx.test"),
			Links: []string{"h2o.test", "nginx.test"}, Verified: true},
		{Host: "gz.caddy.test", PageStep: spyder.StatusRobotsBlocked, Server: "caddy", Robots: Resource{Type: "text/plain", Encoding: "gzip", Body: disallowAll},
			Page: linkOnly("invented.test"), Verified: true},
		{Host: "brpage.caddy.test", Server: "caddy", Robots: allowAll,
			Page: Resource{Encoding: "br", Body: page("", "https://brc-linked.test/")}, Links: []string{"brc-linked.test"}, Verified: true},
		{Host: "p384.caddy.test", Server: "caddy", Key: P384, Groups: "P-384", Robots: allowAll, Page: linkOnly("p384c-linked.test"),
			Links: []string{"p384c-linked.test"}, Verified: true},
		{Host: "tls12.caddy.test", Server: "caddy", Key: P384, TLS12: true, Robots: allowAll, Page: linkOnly("tls12c-linked.test"),
			Links: []string{"tls12c-linked.test"}, Verified: true},
		{Host: "x25519.caddy.test", Server: "caddy", Groups: "X25519", Robots: allowAll, Page: linkOnly("x25519c-linked.test"),
			Links: []string{"x25519c-linked.test"}, Verified: true},
		{Host: "redir.caddy.test", Server: "caddy", Robots: allowAll, Page: Resource{Status: 302, Location: "https://h2o.test/"},
			RedirectsTo: [][2]string{{"redir.caddy.test", "h2o.test"}}, Links: []string{"h2o.test", "caddy.test"}, Verified: true},

		// h2o
		{Host: "h2o.test", Server: "h2o", Key: RSA2048, Robots: allowAll, Page: linkOnly("caddy.test", "h2o.test"),
			Links: []string{"caddy.test", "h2o.test"}, Verified: true},
		{Host: "gz.h2o.test", PageStep: spyder.StatusRobotsBlocked, Server: "h2o", Robots: Resource{Type: "text/plain", Encoding: "gzip", Body: disallowAll},
			Page: linkOnly("invented.test"), Verified: true},
		{Host: "deflatepage.h2o.test", Server: "h2o", Robots: allowAll,
			Page: Resource{Encoding: "deflate", Body: page("", "https://deflateh-linked.test/")}, Links: []string{"deflateh-linked.test"}, Verified: true},
		{Host: "w1252.h2o.test", Server: "h2o", Robots: allowAll,
			Page:  Resource{Type: "text/html; charset=windows-1252", Body: in(charmap.Windows1252, page("", "https://café.test/"))},
			Links: []string{"xn--caf-dma.test"}, Verified: true},
		{Host: "redir.h2o.test", Server: "h2o", Robots: allowAll, Page: Resource{Status: 308, Location: "//caddy.test/"},
			RedirectsTo: [][2]string{{"redir.h2o.test", "caddy.test"}}, Links: []string{"h2o.test", "nginx.test"}, Verified: true},

		// HAProxy
		{Host: "haproxy.test", Server: "haproxy", Groups: "X25519", Robots: allowAll, Page: linkOnly("nginx.test"),
			Links: []string{"nginx.test"}, Verified: true},
		{Host: "htmlrobots.haproxy.test", Server: "haproxy", Robots: Resource{Body: page("", "https://robots-page-link.test/")},
			Page: linkOnly("htmlrobots-linked.test"), Links: []string{"htmlrobots-linked.test"}, Verified: true},
		{Host: "loop.haproxy.test", PageStep: spyder.StatusTooManyRedirects, Server: "haproxy", Robots: allowAll, Page: Resource{Status: 302, Location: "/"}, Verified: true},
		{Host: "self.haproxy.test", Server: "haproxy", Cert: LeafSpec{Self: true}, Robots: allowAll, Page: linkOnly("self-linked.test"),
			Links: []string{"self-linked.test"}},
		{Host: "expired.haproxy.test", Server: "haproxy", Cert: LeafSpec{Expired: true}, Robots: allowAll, Page: linkOnly("expired-linked.test"),
			Links: []string{"expired-linked.test"}},
		{Host: "plain.haproxy.test", Server: "haproxy", Plain: true, Robots: allowAll, Page: linkOnly("invented.test"), TLSFail: "not TLS"},
		{Host: "hints.haproxy.test", Server: "haproxy", EarlyHint: true, Robots: allowAll, Page: linkOnly("hints-linked.test"),
			Links: []string{"hints-linked.test"}, Verified: true},
		{Host: "protorel.haproxy.test", Server: "haproxy", Robots: allowAll, Page: Resource{Status: 308, Location: "//lighttpd.test/"},
			RedirectsTo: [][2]string{{"protorel.haproxy.test", "lighttpd.test"}}, Links: []string{"nginx.test", "apache.test"}, Verified: true},
		{Host: "r401.haproxy.test", Server: "haproxy", Robots: Resource{Status: 401}, Page: linkOnly("r401-linked.test"),
			Links: []string{"r401-linked.test"}, Verified: true},
		{Host: "gz.haproxy.test", PageStep: spyder.StatusRobotsBlocked, Server: "haproxy", Robots: Resource{Type: "text/plain", Encoding: "gzip", Body: disallowAll},
			Page: linkOnly("invented.test"), Verified: true},
		{Host: "rsa4096.haproxy.test", Server: "haproxy", Key: RSA4096, TLS12: true, Robots: allowAll, Page: linkOnly("rsa4096-linked.test"),
			Links: []string{"rsa4096-linked.test"}, Verified: true},
		{Host: "chain5.haproxy.test", Server: "haproxy", Chain: 5, Robots: allowAll, Page: linkOnly("chain5-linked.test"),
			Links: []string{"chain5-linked.test"}, Verified: true},
		{Host: "chain6.haproxy.test", PageStep: spyder.StatusTooManyRedirects, Server: "haproxy", Chain: 6, Robots: allowAll, Page: linkOnly("invented.test"), Verified: true},
		{Host: "latin1.haproxy.test", Server: "haproxy", Robots: allowAll,
			Page:  Resource{Type: "text/html; charset=ISO-8859-1", Body: in(charmap.ISO8859_1, page("", "https://straße.test/"))},
			Links: []string{"xn--strae-oqa.test"}, Verified: true},
		{Host: "p384only.haproxy.test", Server: "haproxy", Key: P384, Groups: "P-384", Robots: allowAll, Page: linkOnly("p384only-linked.test"),
			Links: []string{"p384only-linked.test"}, Verified: true},
	}
}

// Name is a DNS name of the world with the records it owns, in the zone of
// the apex Zone; Site gives it an A record to that site's address.
type Name struct {
	Host, Zone string
	Site       string
	CNAME      string
	MX         []string
	TXT        []string
	Wildcard   bool // the records are owned by *.Host, and the crawl visits any.Host
	// NoCert says the name's server has no certificate for it and ends
	// the handshake (Caddy, which has no default certificate).
	NoCert bool
	// DeadA gives the name an A record to an address where nothing
	// listens, beside its site's (IPv6) address: the crawl must go on to
	// the next address.
	DeadA bool
	// Steps are the statuses a correct crawl's steps end with, where the
	// test checks them.
	Steps map[string]string
}

// bigTXT is a TXT set larger than a UDP answer of 4096 bytes: the
// resolver truncates it, and only TCP carries it.
var bigTXT = func() []string {
	var txt []string
	for i := range 30 {
		txt = append(txt, fmt.Sprintf("%02d-%s", i, strings.Repeat("x", 200)))
	}
	return txt
}()

// names are the world's DNS names beyond the sites' own A records.
func names() []Name {
	return []Name{
		{Host: "nginx.test", Zone: "nginx.test", Site: "nginx.test", MX: []string{"mail.nginx.test"}, TXT: []string{"v=spf1 -all"}},
		{Host: "mail.nginx.test", Zone: "nginx.test", Site: "nginx.test"},
		{Host: "www.nginx.test", Zone: "nginx.test", CNAME: "nginx.test"},
		{Host: "apache.test", Zone: "apache.test", Site: "apache.test", MX: []string{"mx.lighttpd.test"}},
		{Host: "chain.apache.test", Zone: "apache.test", CNAME: "c2.apache.test"},
		{Host: "c2.apache.test", Zone: "apache.test", CNAME: "c3.apache.test"},
		{Host: "c3.apache.test", Zone: "apache.test", CNAME: "apache.test"},
		{Host: "lighttpd.test", Zone: "lighttpd.test", Site: "lighttpd.test", TXT: bigTXT, MX: []string{"mx.lighttpd.test"}},
		{Host: "mx.lighttpd.test", Zone: "lighttpd.test", Site: "lighttpd.test"},
		{Host: "haproxy.test", Zone: "haproxy.test", Site: "haproxy.test", MX: []string{"mx1.nginx.test", "mx2.apache.test"},
			TXT: []string{"v=spf1 mx -all", "site-verification=interop"}},
		{Host: "wild.haproxy.test", Zone: "haproxy.test", Site: "haproxy.test", Wildcard: true},
		{Host: "lame.test", Steps: map[string]string{"dns": "timeout|servfail", "page": "timeout|servfail"}},
		{Host: "bogus.test", Steps: map[string]string{"dns": "servfail", "page": "servfail"}},
		{Host: "dual.nginx.test", Zone: "nginx.test", Site: "v6.nginx.test", DeadA: true},
		{Host: "refused.test", Steps: map[string]string{"dns": "servfail", "page": "servfail"}},
		{Host: "refused-knot.test", Steps: map[string]string{"dns": "servfail", "page": "servfail"}},
		{Host: "refused-pdns.test", Steps: map[string]string{"dns": "servfail", "page": "servfail"}},
		{Host: "dangling.nginx.test", Zone: "nginx.test", CNAME: "gone.nginx.test", Steps: noAddress},
		{Host: "dangling.apache.test", Zone: "apache.test", CNAME: "gone.apache.test", Steps: noAddress},
		{Host: "dangling.caddy.test", Zone: "caddy.test", CNAME: "gone.caddy.test", Steps: noAddress},
		{Host: "chain.nginx.test", Zone: "nginx.test", CNAME: "c2.nginx.test"},
		{Host: "c2.nginx.test", Zone: "nginx.test", CNAME: "c3.nginx.test"},
		{Host: "c3.nginx.test", Zone: "nginx.test", CNAME: "nginx.test"},
		{Host: "chain.lighttpd.test", Zone: "lighttpd.test", CNAME: "c2.lighttpd.test"},
		{Host: "c2.lighttpd.test", Zone: "lighttpd.test", CNAME: "c3.lighttpd.test"},
		{Host: "c3.lighttpd.test", Zone: "lighttpd.test", CNAME: "lighttpd.test"},
		{Host: "wild.lighttpd.test", Zone: "lighttpd.test", Site: "lighttpd.test", Wildcard: true},
		{Host: "alias.caddy.test", Zone: "caddy.test", CNAME: "caddy.test", NoCert: true,
			Steps: map[string]string{"tls": "tls_error", "page": "tls_error"}},
		{Host: "bigtxt.nginx.test", Zone: "nginx.test", TXT: bigTXT, Steps: noAddress},
		{Host: "bigtxt.apache.test", Zone: "apache.test", TXT: bigTXT, Steps: noAddress},
		{Host: "knot-tcp.test", Zone: "knot-tcp.test", Site: "knot-tcp.test", MX: []string{"mx.knot-tcp.test"}, TXT: []string{"v=spf1 -all"}},
		{Host: "mx.knot-tcp.test", Zone: "knot-tcp.test", Site: "knot-tcp.test"},
		{Host: "alias.knot-tcp.test", Zone: "knot-tcp.test", CNAME: "knot-tcp.test"},
		{Host: "bigtxt.knot-tcp.test", Zone: "knot-tcp.test", TXT: bigTXT, Steps: noAddress},
	}
}

// noAddress are the steps of a name that resolves to no address.
var noAddress = map[string]string{"dns": "ok", "page": "no_address"}

// signed are the zones signed with DNSSEC (beside the root and test.);
// bogus.test is signed with a DS in test. that matches none of its keys.
var signed = map[string]bool{"nginx.test": true, "apache.test": true, "haproxy.test": true}

// tcpOnly are the zones whose server answers only over TCP (see Zone).
var tcpOnly = map[string]bool{"knot-tcp.test": true}

// zones are the world's zones and their servers: every site's host is in
// the zone of its apex.
var zones = map[string][]string{
	"nginx.test":    {"nsd"},
	"apache.test":   {"knot"},
	"lighttpd.test": {"pdns"},
	"haproxy.test":  {"nsd", "knot"},
	"caddy.test":    {"pdns"},
	"h2o.test":      {"knot", "pdns"},
	"knot-tcp.test": {"knot"},
}
