package interop

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/andybalholm/brotli"
)

// Resource is what a site serves at one path: a status (0 means 200), a
// Location for a redirect, or a body with its Content-Type and, when
// Encoding is set ("gzip", "deflate" or "br"), the Content-Encoding the
// server sends it with whatever the request accepted, as servers of
// precompressed files do. Body is uncompressed; the world compresses it.
type Resource struct {
	Status   int
	Location string
	Type     string
	Encoding string
	Body     []byte
}

// Site is an HTTPS site: one host served at an address of its own by one
// server program, with its certificate and the two resources a crawl asks
// for. The expectations say what a correct crawl records for it.
type Site struct {
	Host   string
	Server string  // "nginx", "apache", "lighttpd", "haproxy", "caddy", "h2o" or "openssl"
	Key    KeyKind // the certificate's key
	Cert   LeafSpec
	Groups string // the key exchange groups the server accepts (OpenSSL names); "" its default
	TLS12  bool   // the server speaks TLS 1.2 only
	TLS10  bool   // the server speaks TLS 1.0 only (nginx)
	TLS13  bool   // the server speaks TLS 1.3 only (not h2o)
	// Extra is more of the site's directives (nginx's server block,
	// Apache's VirtualHost, HAProxy's frontend).
	Extra string
	Plain bool // the server speaks plain HTTP on port 443 (HAProxy)
	// EarlyHint makes the server send a 103 Early Hints before the page
	// (HAProxy).
	EarlyHint bool
	// Chain makes "/" the start of that many 302 redirects, "/" to "/1"
	// and so on, the last serving the page (HAProxy, nginx).
	Chain int
	// HTTP makes the server also listen on port 80, redirecting every
	// request to https (nginx, Apache).
	HTTP bool
	// HTTP10 makes the server answer in HTTP/1.0 (lighttpd's
	// server.protocol-http11 = "disable"): Content-Length and a closed
	// connection after each response.
	HTTP10 bool
	Robots Resource
	Page   Resource

	// Links are the hosts a correct crawl records LINKS_TO edges to
	// (punycode), and RedirectsTo the REDIRECTS_TO edges, source → target.
	Links       []string
	RedirectsTo [][2]string
	// PageStep is the page step's status a correct crawl records, when
	// not "ok".
	PageStep string
	// Verified says whether the certificate verifies for Host.
	Verified bool
	// TLSFail, when set, is what the tls step's detail of a correct
	// crawl says: the handshake fails, and nothing past it is recorded.
	TLSFail string

	// IP6 gives the site an IPv6 address (an AAAA record) rather than
	// an IPv4 one (nginx, Apache, lighttpd, OpenSSL).
	IP6 bool

	IP   string // given by the world
	Leaf *Leaf  // issued by the world
}

// files writes the site's resources under dir/<host>/ (robots.txt and
// index.html, compressed as they are served) and returns that directory.
func (s *Site) files(tb testing.TB, dir string) string {
	tb.Helper()
	root := filepath.Join(dir, "www", s.Host)
	if err := os.MkdirAll(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	for name, r := range map[string]Resource{"robots.txt": s.Robots, "index.html": s.Page} {
		body, err := encode(r.Encoding, r.Body)
		if err != nil {
			tb.Fatal(err)
		}
		writeFile(tb, root, name, body)
	}
	return root
}

// encode compresses b as the Content-Encoding enc says.
func encode(enc string, b []byte) ([]byte, error) {
	var buf bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "":
		return b, nil
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "br":
		w = brotli.NewWriter(&buf)
	default:
		return nil, fmt.Errorf("interop: unknown encoding %q", enc)
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	err := w.Close()
	return buf.Bytes(), err
}

// CloseStatus is the Status of a resource whose request the server
// answers by closing the connection, with no response (nginx's 444,
// HAProxy's "http-request reject").
const CloseStatus = 444

// NoType is the Type of a resource served without a Content-Type.
const NoType = "none"

// contentType is r's Content-Type: text/html when unset, "" for NoType.
func (r Resource) contentType() string {
	switch r.Type {
	case "":
		return "text/html"
	case NoType:
		return ""
	}
	return r.Type
}

// status is r's status code, 200 when unset.
func (r Resource) status() int {
	if r.Status == 0 {
		return 200
	}
	return r.Status
}

// addr is the site's address and port 443, as "ip:443" or "[ip]:443".
func (s *Site) addr() string { return net.JoinHostPort(s.IP, "443") }

// rr is the type of the record holding the site's address.
func (s *Site) rr() string {
	if s.IP6 {
		return "AAAA"
	}
	return "A"
}
