package interop

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// caddyCurves are Caddy's names of the OpenSSL group names sites use.
var caddyCurves = map[string]string{"X25519": "x25519", "P-256": "secp256r1", "P-384": "secp384r1", "P-521": "secp521r1"}

// caddyConf is a Caddyfile serving sites, each on its own address, with
// the certificates given (no certificate management, no admin endpoint).
func caddyConf(dir string, sites []*Site) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n admin off\n auto_https off\n storage file_system %s\n}\n", filepath.Join(dir, "caddy-data"))
	for _, s := range sites {
		fmt.Fprintf(&b, "https://%s {\n bind %s\n tls %s %s {\n", s.Host, s.IP, s.Leaf.ChainFile, s.Leaf.KeyFile)
		if s.TLS12 {
			b.WriteString("  protocols tls1.2 tls1.2\n")
		}
		if s.TLS13 {
			b.WriteString("  protocols tls1.3\n")
		}
		if s.Groups != "" {
			var cs []string
			for _, g := range strings.Split(s.Groups, ":") {
				cs = append(cs, caddyCurves[g])
			}
			fmt.Fprintf(&b, "  curves %s\n", strings.Join(cs, " "))
		}
		fmt.Fprintf(&b, " }\n root * %s\n", filepath.Join(dir, "www", s.Host))
		caddyPath(&b, "robots", "/robots.txt", s.Robots)
		caddyPath(&b, "page", "/", s.Page)
		b.WriteString("}\n")
	}
	return b.String()
}

func caddyPath(b *strings.Builder, name, path string, r Resource) {
	fmt.Fprintf(b, " @%s path %s\n handle @%s {\n", name, path, name)
	switch {
	case r.Location != "":
		// "*": a first argument starting with "/" would be a matcher.
		fmt.Fprintf(b, "  redir * %s %d\n", r.Location, r.status())
	case r.status() != 200:
		fmt.Fprintf(b, "  respond %d\n", r.status())
	default:
		if t := r.contentType(); t != "" {
			fmt.Fprintf(b, "  header Content-Type %q\n", t)
		}
		if r.Encoding != "" {
			fmt.Fprintf(b, "  header Content-Encoding %s\n", r.Encoding)
		}
		b.WriteString("  file_server\n")
	}
	b.WriteString(" }\n")
}

// h2oConf is an h2o configuration serving sites, each on its own address.
// It serves 200s and redirects.
func h2oConf(dir string, sites []*Site) string {
	var b strings.Builder
	fmt.Fprintf(&b, "user: root\npid-file: %s/h2o.pid\nerror-log: %s/h2o-error.log\nhosts:\n", dir, dir)
	for _, s := range sites {
		root := filepath.Join(dir, "www", s.Host)
		fmt.Fprintf(&b, "  \"%s:443\":\n    listen:\n      host: %s\n      port: 443\n      ssl:\n", s.Host, s.IP)
		fmt.Fprintf(&b, "        certificate-file: %s\n        key-file: %s\n        minimum-version: TLSv1.2\n", s.Leaf.ChainFile, s.Leaf.KeyFile)
		b.WriteString("    paths:\n")
		h2oPath(&b, "/robots.txt", filepath.Join(root, "robots.txt"), s.Robots)
		h2oPath(&b, "/", filepath.Join(root, "index.html"), s.Page)
	}
	return b.String()
}

func h2oPath(b *strings.Builder, path, file string, r Resource) {
	fmt.Fprintf(b, "      %q:\n", path)
	if r.Location != "" {
		fmt.Fprintf(b, "        redirect:\n          url: %s\n          status: %d\n", r.Location, r.status())
		return
	}
	fmt.Fprintf(b, "        file.file: %s\n", file)
	fmt.Fprintf(b, "        file.mime.settypes:\n          %q: %q\n", r.contentType(), filepath.Ext(file))
	if r.Encoding != "" {
		fmt.Fprintf(b, "        header.set: \"Content-Encoding: %s\"\n", r.Encoding)
	}
}

// startSServer starts OpenSSL's own test server for s, in HTTP/1.0 mode
// (s_server -WWW): it serves the files of s's directory by path as
// "HTTP/1.0 200 ok" with a Content-Type by extension and no
// Content-Length, closing the connection after each. It has no index
// file: the front page "/" is an error text served as text/plain.
func startSServer(tb testing.TB, dir string, s *Site) {
	tb.Helper()
	root := filepath.Join(dir, "www", s.Host)
	Start(tb, root, "s_server", []string{s.addr()}, "openssl", "s_server", "-quiet", "-WWW",
		"-accept", s.addr(), "-cert", s.Leaf.ChainFile, "-cert_chain", s.Leaf.ChainFile, "-key", s.Leaf.KeyFile)
}
