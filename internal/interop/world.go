package interop

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
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
	Server string  // "nginx", "apache", "lighttpd" or "haproxy"
	Key    KeyKind // the certificate's key
	Cert   LeafSpec
	Groups string // the key exchange groups the server accepts (OpenSSL names); "" its default
	TLS12  bool   // the server speaks TLS 1.2 only
	TLS10  bool   // the server speaks TLS 1.0 only (nginx)
	TLS13  bool   // the server speaks TLS 1.3 only (nginx, Apache)
	// Extra is more of the server block's directives (nginx).
	Extra string
	Plain bool // the server speaks plain HTTP on port 443 (HAProxy)
	// EarlyHint makes the server send a 103 Early Hints before the page
	// (HAProxy).
	EarlyHint bool
	// Chain makes "/" the start of that many 302 redirects, "/" to "/1"
	// and so on, the last serving the page (HAProxy).
	Chain int
	// HTTP makes the server also listen on port 80, redirecting every
	// request to https (nginx).
	HTTP   bool
	Robots Resource
	Page   Resource

	// Links are the hosts a correct crawl records LINKS_TO edges to
	// (punycode), and RedirectsTo the REDIRECTS_TO edges, source → target.
	Links       []string
	RedirectsTo [][2]string
	// Verified says whether the certificate verifies for Host.
	Verified bool
	// TLSFail, when set, is what the tls step's detail of a correct
	// crawl says: the handshake fails, and nothing past it is recorded.
	TLSFail string

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
