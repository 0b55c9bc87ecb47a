package interop

import (
	"strings"

	"github.com/spyder-crawler/spyder"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"
)

// linkedName is the host the default page of host links to.
func linkedName(host string) string { return strings.ReplaceAll(host, ".", "-") + "-linked.test" }

// variant is a site of server with a verified certificate, a robots.txt
// that allows everything and a page linking to linkedName(host), changed
// by each of fs.
func variant(host, server string, fs ...func(*Site)) *Site {
	l := linkedName(host)
	s := &Site{Host: host, Server: server, Robots: allowAll, Page: linkOnly(l), Links: []string{l}, Verified: true}
	for _, f := range fs {
		f(s)
	}
	return s
}

// The changes variant makes.
func key(k KeyKind) func(*Site)      { return func(s *Site) { s.Key = k } }
func groups(g string) func(*Site)    { return func(s *Site) { s.Groups = g } }
func robots(r Resource) func(*Site)  { return func(s *Site) { s.Robots = r } }
func tls12(s *Site)                  { s.TLS12 = true }
func tls13(s *Site)                  { s.TLS13 = true }
func cert(c LeafSpec) func(*Site)    { return func(s *Site) { s.Cert, s.Verified = c, false } }
func fails(why string) func(*Site)   { return func(s *Site) { s.TLSFail, s.Links = why, nil } }
func step(status string) func(*Site) { return func(s *Site) { s.PageStep, s.Links = status, nil } }

// blocked serves a robots.txt r that disallows everything: the page is
// not fetched.
func blocked(r Resource) func(*Site) {
	return func(s *Site) { s.Robots, s.PageStep, s.Links = r, spyder.StatusRobotsBlocked, nil }
}

// body serves a page of type typ (text/html when "") encoded with enc,
// linking to a host written as written, which the crawl records as host.
func body(typ, enc string, b []byte, host string) func(*Site) {
	return func(s *Site) { s.Page, s.Links = Resource{Type: typ, Encoding: enc, Body: b}, []string{host} }
}

// redirect answers the page with status to loc, which is a page of
// target, linking to links; the crawl records REDIRECTS_TO when target is
// another registrable domain. The page's body stays in its file, for a
// redirect to it by another path.
func redirect(status int, loc, target string, links ...string) func(*Site) {
	return func(s *Site) {
		s.Page, s.Links = Resource{Status: status, Location: loc, Body: s.Page.Body}, links
		if target != "" {
			s.RedirectsTo = [][2]string{{s.Host, target}}
		}
	}
}

// The links of the sites redirects lead to.
var (
	nginxLinks = []string{"nginx.test", "apache.test", "www.lighttpd.test", "haproxy.test"}
	h2oLinks   = []string{"caddy.test", "h2o.test"}
	caddyLinks = []string{"h2o.test", "nginx.test"}
)

// moreSites are the variants of sites() again on the other servers that
// can serve them, so that each variant is met on more than one server.
func moreSites() []*Site {
	var ss []*Site
	ss = append(ss, tlsSites()...)
	ss = append(ss, robotsSites()...)
	ss = append(ss, httpSites()...)
	return append(ss, htmlSites()...)
}

func tlsSites() []*Site {
	return []*Site{
		variant("knot-tcp.test", "nginx"),
		variant("tls13.haproxy.test", "haproxy", tls13),
		variant("tls13.lighttpd.test", "lighttpd", tls13),
		variant("tls13.caddy.test", "caddy", tls13),
		variant("rsa2048.lighttpd.test", "lighttpd", key(RSA2048)),
		variant("rsa2048.caddy.test", "caddy", key(RSA2048)),
		variant("rsa4096.caddy.test", "caddy", key(RSA4096)),
		variant("p384.apache.test", "apache", key(P384)),
		variant("ed25519.lighttpd.test", "lighttpd", key(Ed25519)),
		variant("ed25519.haproxy.test", "haproxy", key(Ed25519)),
		variant("ed25519.caddy.test", "caddy", key(Ed25519)),
		variant("x25519.apache.test", "apache", groups("X25519")),
		variant("x25519.lighttpd.test", "lighttpd", groups("X25519")),
		variant("p256.nginx.test", "nginx", groups("prime256v1")),
		variant("p256.apache.test", "apache", groups("P-256")),
		variant("p256.haproxy.test", "haproxy", groups("P-256")),
		variant("p256.caddy.test", "caddy", groups("P-256")),
		variant("p384only.apache.test", "apache", groups("P-384")),
		variant("p521.nginx.test", "nginx", groups("secp521r1")),
		variant("p521.haproxy.test", "haproxy", groups("P-521")),
		variant("p521.caddy.test", "caddy", groups("P-521")),
		variant("p521.lighttpd.test", "lighttpd", groups("P-521")),
		variant("tls12p384.haproxy.test", "haproxy", key(P384), tls12),
		variant("tls12p384.apache.test", "apache", key(P384), tls12),
		variant("x448.apache.test", "apache", groups("X448"), fails("no common key exchange group")),
		variant("x448.haproxy.test", "haproxy", groups("X448"), fails("no common key exchange group")),
		variant("plain.nginx.test", "nginx", func(s *Site) { s.Plain = true }, fails("not TLS")),
		variant("nointer.haproxy.test", "haproxy", cert(LeafSpec{NoInter: true})),
		variant("nointer.lighttpd.test", "lighttpd", cert(LeafSpec{NoInter: true})),
		variant("nointer.caddy.test", "caddy", cert(LeafSpec{NoInter: true})),
		variant("expired.nginx.test", "nginx", cert(LeafSpec{Expired: true})),
		variant("expired.apache.test", "apache", cert(LeafSpec{Expired: true})),
		variant("expired.caddy.test", "caddy", cert(LeafSpec{Expired: true})),
		variant("self.nginx.test", "nginx", cert(LeafSpec{Self: true})),
		variant("self.apache.test", "apache", cert(LeafSpec{Self: true})),
		variant("self.lighttpd.test", "lighttpd", cert(LeafSpec{Self: true})),
		variant("dupext.nginx.test", "nginx", cert(LeafSpec{DupExt: true}), fails(badCert)),
		variant("dupext.apache.test", "apache", cert(LeafSpec{DupExt: true}), fails(badCert)),
		variant("dupext.lighttpd.test", "lighttpd", cert(LeafSpec{DupExt: true}), fails(badCert)),
		variant("dupext.haproxy.test", "haproxy", cert(LeafSpec{DupExt: true}), fails(badCert)),
		variant("wrongname.nginx.test", "nginx", cert(LeafSpec{Names: []string{"elsewhere.test"}})),
		variant("wrongname.apache.test", "apache", cert(LeafSpec{Names: []string{"elsewhere.test"}})),
		variant("wrongname.haproxy.test", "haproxy", cert(LeafSpec{Names: []string{"elsewhere.test"}})),
	}
}

func robotsSites() []*Site {
	gz := Resource{Type: "text/plain", Encoding: "gzip", Body: disallowAll}
	deflate := Resource{Type: "text/plain", Encoding: "deflate", Body: disallowAll}
	br := Resource{Type: "text/plain", Encoding: "br", Body: disallowAll}
	html := Resource{Body: page("", "https://robots-page-link.test/")}
	big := Resource{Type: "text/plain", Body: bigRobots}
	return []*Site{
		variant("gz.apache.test", "apache", blocked(gz)),
		variant("gz.lighttpd.test", "lighttpd", blocked(gz)),
		variant("deflate.nginx.test", "nginx", blocked(deflate)),
		variant("deflate.haproxy.test", "haproxy", blocked(deflate)),
		variant("deflate.lighttpd.test", "lighttpd", blocked(deflate)),
		variant("deflate.caddy.test", "caddy", blocked(deflate)),
		variant("br.nginx.test", "nginx", blocked(br)),
		variant("br.haproxy.test", "haproxy", blocked(br)),
		variant("br.caddy.test", "caddy", blocked(br)),
		variant("br.h2o.test", "h2o", blocked(br)),
		variant("r401.nginx.test", "nginx", robots(Resource{Status: 401})),
		variant("r401.apache.test", "apache", robots(Resource{Status: 401})),
		variant("r401.caddy.test", "caddy", robots(Resource{Status: 401})),
		variant("r403.nginx.test", "nginx", robots(Resource{Status: 403})),
		variant("r403.haproxy.test", "haproxy", robots(Resource{Status: 403})),
		variant("r403.caddy.test", "caddy", robots(Resource{Status: 403})),
		variant("r502.haproxy.test", "haproxy", blocked(Resource{Status: 502})),
		variant("r500.caddy.test", "caddy", blocked(Resource{Status: 500})),
		variant("rredir.nginx.test", "nginx", blocked(Resource{Status: 301, Location: "https://deflate.apache.test/robots.txt"})),
		variant("rredir.apache.test", "apache", blocked(Resource{Status: 302, Location: "https://br.lighttpd.test/robots.txt"})),
		variant("rredir.haproxy.test", "haproxy", blocked(Resource{Status: 307, Location: "https://gz.caddy.test/robots.txt"})),
		variant("rredir.caddy.test", "caddy", blocked(Resource{Status: 308, Location: "https://gz.h2o.test/robots.txt"})),
		variant("rredir.h2o.test", "h2o", blocked(Resource{Status: 301, Location: "https://gz.haproxy.test/robots.txt"})),
		variant("htmlrobots.nginx.test", "nginx", robots(html)),
		variant("htmlrobots.apache.test", "apache", robots(html)),
		variant("htmlrobots.lighttpd.test", "lighttpd", robots(html)),
		variant("htmlrobots.caddy.test", "caddy", robots(html)),
		variant("htmlrobots.h2o.test", "h2o", robots(html)),
		variant("big.apache.test", "apache", blocked(big)),
		variant("big.lighttpd.test", "lighttpd", blocked(big)),
		variant("big.caddy.test", "caddy", blocked(big)),
		variant("big.h2o.test", "h2o", blocked(big)),
	}
}

// encoded is a page linking to a host of its own, served with encoding enc.
func encoded(host, server, enc string) *Site {
	l := linkedName(host)
	return variant(host, server, body("", enc, page("", "https://"+l+"/"), l))
}

func httpSites() []*Site {
	xhtml := []byte(`<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title></head><body><a href="https://xhtml-linked.test/">x</a></body></html>`)
	upper := page("", "https://upper-linked.test/")
	return []*Site{
		encoded("gzpage.apache.test", "apache", "gzip"),
		encoded("gzpage.haproxy.test", "haproxy", "gzip"),
		encoded("gzpage.lighttpd.test", "lighttpd", "gzip"),
		encoded("gzpage.caddy.test", "caddy", "gzip"),
		encoded("gzpage.h2o.test", "h2o", "gzip"),
		encoded("deflatepage.nginx.test", "nginx", "deflate"),
		encoded("deflatepage.haproxy.test", "haproxy", "deflate"),
		encoded("deflatepage.lighttpd.test", "lighttpd", "deflate"),
		encoded("deflatepage.caddy.test", "caddy", "deflate"),
		encoded("brpage.nginx.test", "nginx", "br"),
		encoded("brpage.apache.test", "apache", "br"),
		encoded("brpage.haproxy.test", "haproxy", "br"),
		encoded("brpage.h2o.test", "h2o", "br"),
		variant("empty.apache.test", "apache", step(spyder.StatusNotHTML), func(s *Site) { s.Page = Resource{Status: 204} }),
		variant("empty.haproxy.test", "haproxy", step(spyder.StatusNotHTML), func(s *Site) { s.Page = Resource{Status: 204} }),
		variant("empty.caddy.test", "caddy", step(spyder.StatusNotHTML), func(s *Site) { s.Page = Resource{Status: 204} }),
		variant("notype.apache.test", "apache", body(NoType, "", page("", "https://notype-linked.test/"), "notype-linked.test")),
		variant("upper.nginx.test", "nginx", body("TEXT/HTML; Charset=UTF-8", "", upper, "upper-linked.test")),
		variant("upper.haproxy.test", "haproxy", body("TEXT/HTML; Charset=UTF-8", "", upper, "upper-linked.test")),
		variant("upper.lighttpd.test", "lighttpd", body("TEXT/HTML; Charset=UTF-8", "", upper, "upper-linked.test")),
		variant("upper.caddy.test", "caddy", body("TEXT/HTML; Charset=UTF-8", "", upper, "upper-linked.test")),
		variant("xhtml.apache.test", "apache", body("application/xhtml+xml", "", xhtml, "xhtml-linked.test")),
		variant("xhtml.haproxy.test", "haproxy", body("application/xhtml+xml; charset=utf-8", "", xhtml, "xhtml-linked.test")),
		variant("xhtml.lighttpd.test", "lighttpd", body("application/xhtml+xml", "", xhtml, "xhtml-linked.test")),
		variant("xhtml.caddy.test", "caddy", body("application/xhtml+xml", "", xhtml, "xhtml-linked.test")),
		variant("r301.nginx.test", "nginx", redirect(301, "https://h2o.test/", "h2o.test", h2oLinks...)),
		variant("r301.haproxy.test", "haproxy", redirect(301, "https://caddy.test/", "caddy.test", caddyLinks...)),
		variant("r302.nginx.test", "nginx", redirect(302, "https://caddy.test/", "caddy.test", caddyLinks...)),
		variant("r302.apache.test", "apache", redirect(302, "https://h2o.test/", "h2o.test", h2oLinks...)),
		variant("r303.apache.test", "apache", redirect(303, "https://nginx.test/", "nginx.test", nginxLinks...)),
		variant("r303.haproxy.test", "haproxy", redirect(303, "https://h2o.test/", "h2o.test", h2oLinks...)),
		variant("r307.apache.test", "apache", redirect(307, "/index.html", "", linkedName("r307.apache.test"))),
		variant("r307.caddy.test", "caddy", redirect(307, "https://nginx.test/", "nginx.test", nginxLinks...)),
		variant("r308.nginx.test", "nginx", redirect(308, "https://caddy.test/", "caddy.test", caddyLinks...)),
		variant("r308.apache.test", "apache", redirect(308, "https://h2o.test/", "h2o.test", h2oLinks...)),
		variant("protorel.caddy.test", "caddy", redirect(308, "//h2o.test/", "h2o.test", h2oLinks...)),
		variant("loop.nginx.test", "nginx", redirect(302, "https://loop.nginx.test/", ""), step(spyder.StatusTooManyRedirects)),
		variant("loop.apache.test", "apache", redirect(301, "/", ""), step(spyder.StatusTooManyRedirects)),
		variant("loop.caddy.test", "caddy", redirect(302, "/", ""), step(spyder.StatusTooManyRedirects)),
	}
}

// charset is a page linking to the Unicode host idn, encoded in e and
// declared by the Content-Type typ or by head; the crawl records puny.
func charset(host, server, typ, head string, e encoding.Encoding, idn, puny string) *Site {
	return variant(host, server, body(typ, "", in(e, page(head, "https://"+idn+"/")), puny))
}

// based is a page whose <base href> is on another host: its relative
// links resolve there.
func based(host, server string) *Site {
	base := linkedName(host)
	return variant(host, server, body("", "", page(`<base href="https://`+base+`/dir/">`, "a.html", "/b"), base))
}

func http10(s *Site) { s.HTTP10 = true }
func ipv6(s *Site)   { s.IP6 = true }

func htmlSites() []*Site {
	w1252, latin1, sjis := charmap.Windows1252, charmap.ISO8859_1, japanese.ShiftJIS
	utf16 := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM)
	return []*Site{
		charset("utf16.apache.test", "apache", "text/html; charset=utf-16", "", utf16, "bücher.test", "xn--bcher-kva.test"),
		charset("utf16bom.caddy.test", "caddy", "text/html", "", utf16, "café.test", "xn--caf-dma.test"),
		charset("latin1.nginx.test", "nginx", "text/html; charset=iso-8859-1", "", latin1, "straße.test", "xn--strae-oqa.test"),
		charset("w1252.lighttpd.test", "lighttpd", "text/html; charset=windows-1252", "", w1252, "bücher.test", "xn--bcher-kva.test"),
		charset("sjis.caddy.test", "caddy", "text/html; charset=Shift_JIS", "", sjis, "日本.test", "xn--wgv71a.test"),
		charset("w1252meta.nginx.test", "nginx", "text/html", `<meta charset="windows-1252">`, w1252, "café.test", "xn--caf-dma.test"),
		charset("w1252meta.haproxy.test", "haproxy", "text/html", `<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">`, w1252, "bücher.test", "xn--bcher-kva.test"),
		charset("latin1meta.apache.test", "apache", "text/html", `<meta charset="iso-8859-1">`, latin1, "straße.test", "xn--strae-oqa.test"),
		charset("sjismeta.h2o.test", "h2o", "text/html", `<meta charset="shift_jis">`, sjis, "例え.test", "xn--r8jz45g.test"),
		based("base.nginx.test", "nginx"),
		based("base.haproxy.test", "haproxy"),
		based("base.caddy.test", "caddy"),
		based("base.h2o.test", "h2o"),
		variant("http10.lighttpd.test", "lighttpd", http10),
		variant("http10gz.lighttpd.test", "lighttpd", http10, blocked(Resource{Type: "text/plain", Encoding: "gzip", Body: disallowAll})),
		variant("sserver.nginx.test", "openssl", blocked(Resource{Type: "text/plain", Body: disallowAll})),
		variant("allow.sserver.nginx.test", "openssl", step(spyder.StatusNotHTML)),
		variant("v6.nginx.test", "nginx", ipv6),
		variant("v6.apache.test", "apache", ipv6),
		variant("v6.lighttpd.test", "lighttpd", ipv6, key(RSA2048)),
		variant("v6.sserver.nginx.test", "openssl", ipv6, blocked(Resource{Type: "text/plain", Body: disallowAll})),
		variant("chain6.nginx.test", "nginx", func(s *Site) { s.Chain = 6 }, step(spyder.StatusTooManyRedirects)),
		variant("chain5.nginx.test", "nginx", func(s *Site) { s.Chain = 5 }),
		variant("tohttp.apache.test", "apache", redirect(302, "http://plainhop.apache.test/", "", linkedName("plainhop.apache.test"))),
		variant("plainhop.apache.test", "apache", func(s *Site) { s.HTTP = true }),
		variant("chunked.apache.test", "apache", func(s *Site) {
			s.Extra = " <Location \"/\">\n  Options +Includes\n  SetOutputFilter INCLUDES\n </Location>\n"
			s.Page.Body = page(`<!--#echo var="SERVER_NAME" -->`, "https://"+linkedName(s.Host)+"/")
		}),
		variant("close.apache.test", "apache", func(s *Site) { s.Extra = " KeepAlive Off\n" }),
		variant("close.haproxy.test", "haproxy", func(s *Site) { s.Extra = " option httpclose\n" }),
		variant("closed.nginx.test", "nginx", step(spyder.StatusError), func(s *Site) { s.Page = Resource{Status: CloseStatus} }),
		variant("closed.haproxy.test", "haproxy", step(spyder.StatusError), func(s *Site) { s.Page = Resource{Status: CloseStatus} }),
		variant("rclosed.nginx.test", "nginx", blocked(Resource{Status: CloseStatus})),
		variant("rclosed.haproxy.test", "haproxy", blocked(Resource{Status: CloseStatus})),
		variant("refresh.nginx.test", "nginx", body("", "", page(`<meta http-equiv="refresh" content="5;URL='https://refresh-nginx.test/'">`), "refresh-nginx.test")),
	}
}

// badCert is how a tls step's detail begins for a certificate Go's parser
// rejects: the reason, then crypto/tls's error.
const badCert = "certificate: tls: failed to parse certificate from server"
