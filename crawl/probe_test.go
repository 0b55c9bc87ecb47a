package crawl_test

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/encoding/japanese"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/host"
)

var fixtureRecords = []string{
	"a.example.com. 60 IN A 192.0.2.1",
	"a.example.com. 60 IN AAAA 2001:db8::1",
	"a.example.com. 60 IN NS ns1.DNSHost.net.",
	"a.example.com. 60 IN MX 10 mail.mx.org.",
	"a.example.com. 60 IN TXT \"v=spf1\" \" -all\"",
	"www.example.com. 60 IN CNAME a.example.com.",
	"self.example.com. 60 IN CNAME self.example.com.",
	"nullmx.example.com. 60 IN A 192.0.2.2",
	"nullmx.example.com. 60 IN MX 0 .",
	"private.example.com. 60 IN A 10.1.2.3",
	"meta.example.com. 60 IN A 169.254.169.254",
	"mixed.example.com. 60 IN A 10.9.9.9",
	"mixed.example.com. 60 IN A 198.51.100.7",
	"agency.gov. 60 IN A 192.0.2.3",
	"agency.gov. 60 IN NS ns.agency.gov.",
	"blocked.example.com. 60 IN A 192.0.2.4",
	"wrongcert.example.net. 60 IN A 192.0.2.5",
	"redir.example.com. 60 IN A 192.0.2.6",
	"big.example.com. 60 IN A 192.0.2.7",
	"hang.example.com. 60 IN A 203.0.113.240",
	"trickle.example.com. 60 IN A 192.0.2.11",
	"hop.example.org. 60 IN A 192.0.2.12",
	"robots-away.example.org. 60 IN A 192.0.2.13",
	"robots-loop.example.org. 60 IN A 192.0.2.14",
	"robots-503.example.org. 60 IN A 192.0.2.15",
	"robots-404.example.org. 60 IN A 192.0.2.16",
	"close-hop.example.org. 60 IN A 192.0.2.17",
	"closing.example.net. 60 IN A 192.0.2.18",
}

var fixtureCertNames = []string{"a.example.com", "www.example.com", "nullmx.example.com", "private.example.com",
	"mixed.example.com", "blocked.example.com", "trickle.example.com", "redir.example.com", "big.example.com", "meta.example.com",
	"hop.example.org", "robots-away.example.org", "robots-loop.example.org", "robots-503.example.org", "robots-404.example.org",
	"close-hop.example.org", "closing.example.net"}

const fixturePage = `<html><head><title>a</title></head><body>
<a href="https://b.example.net/x">b</a> <a href="/local">local</a> <a href="https://www.example.com/">same apex</a>
<a href="mailto:x@c.example.org">mail</a> <img src="//img.cdn.io/p.png">
</body></html>`

func fixtureHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		switch {
		case host == "trickle.example.com":
			// One byte every 20 ms, until the client goes away.
			w.Header().Set("Content-Type", "text/plain")
			for r.Context().Err() == nil {
				if _, err := w.Write([]byte("#")); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				time.Sleep(20 * time.Millisecond)
			}
		case r.URL.Path == "/robots.txt" && host == "robots-away.example.org":
			http.Redirect(w, r, "https://blocked.example.com/robots.txt", http.StatusFound)
		case r.URL.Path == "/robots.txt" && host == "robots-loop.example.org":
			http.Redirect(w, r, "/robots.txt?"+r.URL.RawQuery+"x", http.StatusFound)
		case r.URL.Path == "/robots.txt" && host == "robots-503.example.org":
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case r.URL.Path == "/robots.txt" && host == "robots-404.example.org":
			http.NotFound(w, r)
		case host == "close-hop.example.org" && r.URL.Path == "/":
			http.Redirect(w, r, "https://closing.example.net/", http.StatusFound)
		case r.URL.Path == "/robots.txt" && host == "closing.example.net":
			w.Header().Set("Connection", "close") // the page needs a new connection
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
		case host == "hop.example.org" && r.URL.Path == "/":
			http.Redirect(w, r, "https://redir.example.com/", http.StatusFound)
		case r.URL.Path == "/robots.txt" && host == "blocked.example.com":
			fmt.Fprint(w, "User-agent: spyder\nDisallow: /\n")
		case r.URL.Path == "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
		case host == "redir.example.com":
			http.Redirect(w, r, "https://a.example.com/", http.StatusMovedPermanently)
		case host == "big.example.com":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<a href="https://before.example.org/">`)
			fmt.Fprint(w, strings.Repeat("x", 2000))
			fmt.Fprint(w, `<a href="https://after.example.org/">`)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, fixturePage)
		}
	})
}

// countingLimiter counts Wait calls per key; it never blocks.
type countingLimiter struct {
	mu    sync.Mutex
	waits map[string]int
}

func (l *countingLimiter) Wait(ctx context.Context, key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waits == nil {
		l.waits = make(map[string]int)
	}
	l.waits[key]++
	return ctx.Err()
}

func mustCrawler(tb testing.TB, f *fixture, mod func(*crawl.Config)) *crawl.Crawler {
	tb.Helper()
	cfg := crawl.Config{
		Resolver: f.resolver, Dial: f.dial, RootCAs: f.roots,
		HostTimeout: 5 * time.Second, ProbeID: "p1", RunID: "r1",
		Now: func() time.Time { return time.Unix(1700000000, 0) },
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := crawl.New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return c
}

func fixtureSPKI(tb testing.TB, f *fixture) string {
	leaf, err := x509.ParseCertificate(f.https.TLS.Certificates[0].Certificate[0])
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(sum[:])
}

type edge struct{ Type, Source, Target string }

func edgesOf(r *spyder.Result) []edge {
	var out []edge
	for _, e := range r.Edges {
		out = append(out, edge{e.Type, e.Source, e.Target})
	}
	slices.SortFunc(out, func(a, b edge) int { return strings.Compare(a.Type+a.Target, b.Type+b.Target) })
	return out
}

func statuses(r *spyder.Result) map[string]string {
	m := make(map[string]string)
	for _, s := range r.Outcome.Steps {
		m[s.Step] = s.Status
	}
	return m
}

func TestCrawler_Probe(t *testing.T) {
	f := mustFixture(t, fixtureRecords, fixtureCertNames, fixtureHandler())
	spki := fixtureSPKI(t, f)
	ok := map[string]string{"dns": "ok", "tls": "ok", "robots": "ok", "page": "ok"}
	skipped := func(s string) map[string]string {
		return map[string]string{"dns": "ok", "tls": s, "robots": s, "page": s}
	}
	tests := []struct {
		host     string
		private  bool
		want     []edge
		steps    map[string]string
		dialed   []string
		requests []string
	}{
		{
			host: "A.Example.com.",
			want: []edge{
				{"LINKS_TO", "a.example.com", "b.example.net"},
				{"LINKS_TO", "a.example.com", "img.cdn.io"},
				{"RESOLVES_TO", "a.example.com", "192.0.2.1"},
				{"RESOLVES_TO", "a.example.com", "2001:db8::1"},
				{"USES_CERT", "a.example.com", spki},
				{"USES_MX", "a.example.com", "mail.mx.org"},
				{"USES_NS", "a.example.com", "ns1.dnshost.net"},
			},
			steps:    ok,
			dialed:   []string{"192.0.2.1:443"},
			requests: []string{"a.example.com /robots.txt", "a.example.com /"},
		},
		{
			host: "www.example.com",
			want: []edge{
				{"ALIAS_OF", "www.example.com", "a.example.com"},
				{"LINKS_TO", "www.example.com", "b.example.net"},
				{"LINKS_TO", "www.example.com", "img.cdn.io"},
				{"RESOLVES_TO", "www.example.com", "192.0.2.1"},
				{"RESOLVES_TO", "www.example.com", "2001:db8::1"},
				{"USES_CERT", "www.example.com", spki},
			},
			steps:    ok,
			dialed:   []string{"192.0.2.1:443"},
			requests: []string{"www.example.com /robots.txt", "www.example.com /"},
		},
		{host: "self.example.com", steps: skipped("no_address")},
		{host: "missing.example.com", steps: map[string]string{"dns": "nxdomain", "tls": "nxdomain", "robots": "nxdomain", "page": "nxdomain"}},
		{
			host:     "nullmx.example.com",
			want:     []edge{{"LINKS_TO", "nullmx.example.com", "b.example.net"}, {"LINKS_TO", "nullmx.example.com", "img.cdn.io"}, {"RESOLVES_TO", "nullmx.example.com", "192.0.2.2"}, {"USES_CERT", "nullmx.example.com", spki}},
			steps:    ok,
			dialed:   []string{"192.0.2.2:443"},
			requests: []string{"nullmx.example.com /robots.txt", "nullmx.example.com /"},
		},
		{host: "private.example.com", want: []edge{{"RESOLVES_TO", "private.example.com", "10.1.2.3"}}, steps: skipped("private_address")},
		{host: "meta.example.com", want: []edge{{"RESOLVES_TO", "meta.example.com", "169.254.169.254"}}, steps: skipped("private_address")},
		{
			host: "private.example.com", private: true,
			want:     []edge{{"LINKS_TO", "private.example.com", "b.example.net"}, {"LINKS_TO", "private.example.com", "img.cdn.io"}, {"RESOLVES_TO", "private.example.com", "10.1.2.3"}, {"USES_CERT", "private.example.com", spki}},
			steps:    ok,
			dialed:   []string{"10.1.2.3:443"},
			requests: []string{"private.example.com /robots.txt", "private.example.com /"},
		},
		{
			host:     "mixed.example.com",
			want:     []edge{{"LINKS_TO", "mixed.example.com", "b.example.net"}, {"LINKS_TO", "mixed.example.com", "img.cdn.io"}, {"RESOLVES_TO", "mixed.example.com", "10.9.9.9"}, {"RESOLVES_TO", "mixed.example.com", "198.51.100.7"}, {"USES_CERT", "mixed.example.com", spki}},
			steps:    ok,
			dialed:   []string{"198.51.100.7:443"},
			requests: []string{"mixed.example.com /robots.txt", "mixed.example.com /"},
		},
		{
			host:  "agency.gov",
			want:  []edge{{"RESOLVES_TO", "agency.gov", "192.0.2.3"}, {"USES_NS", "agency.gov", "ns.agency.gov"}},
			steps: skipped("excluded"),
		},
		{
			host:     "blocked.example.com",
			want:     []edge{{"RESOLVES_TO", "blocked.example.com", "192.0.2.4"}, {"USES_CERT", "blocked.example.com", spki}},
			steps:    map[string]string{"dns": "ok", "tls": "ok", "robots": "ok", "page": "robots_blocked"},
			dialed:   []string{"192.0.2.4:443"},
			requests: []string{"blocked.example.com /robots.txt"},
		},
		{
			host:     "wrongcert.example.net",
			want:     []edge{{"LINKS_TO", "wrongcert.example.net", "img.cdn.io"}, {"LINKS_TO", "wrongcert.example.net", "www.example.com"}, {"RESOLVES_TO", "wrongcert.example.net", "192.0.2.5"}, {"USES_CERT", "wrongcert.example.net", spki}},
			steps:    map[string]string{"dns": "ok", "tls": "unverified", "robots": "ok", "page": "ok"},
			dialed:   []string{"192.0.2.5:443"},
			requests: []string{"wrongcert.example.net /robots.txt", "wrongcert.example.net /"},
		},
		{
			// The final page's links are credited to the probed host; the
			// redirect target itself is no LINKS_TO.
			host: "redir.example.com",
			want: []edge{
				{"LINKS_TO", "redir.example.com", "b.example.net"},
				{"LINKS_TO", "redir.example.com", "img.cdn.io"},
				{"RESOLVES_TO", "redir.example.com", "192.0.2.6"},
				{"USES_CERT", "redir.example.com", spki},
			},
			steps:    ok,
			dialed:   []string{"192.0.2.6:443", "192.0.2.1:443"},
			requests: []string{"redir.example.com /robots.txt", "redir.example.com /", "a.example.com /robots.txt", "a.example.com /"},
		},
		{
			// A hop to another registrable domain is a REDIRECTS_TO edge
			// from the hop's host; one within example.com is not.
			host: "hop.example.org",
			want: []edge{
				{"LINKS_TO", "hop.example.org", "a.example.com"},
				{"LINKS_TO", "hop.example.org", "b.example.net"},
				{"LINKS_TO", "hop.example.org", "img.cdn.io"},
				{"LINKS_TO", "hop.example.org", "www.example.com"},
				{"REDIRECTS_TO", "hop.example.org", "redir.example.com"},
				{"RESOLVES_TO", "hop.example.org", "192.0.2.12"},
				{"USES_CERT", "hop.example.org", spki},
			},
			steps:  ok,
			dialed: []string{"192.0.2.12:443", "192.0.2.6:443", "192.0.2.1:443"},
			requests: []string{"hop.example.org /robots.txt", "hop.example.org /", "redir.example.com /robots.txt",
				"redir.example.com /", "a.example.com /robots.txt", "a.example.com /"},
		},
		{
			// The redirect target's server closes the connection after
			// its robots.txt: the page goes out on a new one.
			host: "close-hop.example.org",
			want: []edge{
				{"LINKS_TO", "close-hop.example.org", "b.example.net"},
				{"LINKS_TO", "close-hop.example.org", "closing.example.net"},
				{"LINKS_TO", "close-hop.example.org", "img.cdn.io"},
				{"LINKS_TO", "close-hop.example.org", "www.example.com"},
				{"REDIRECTS_TO", "close-hop.example.org", "closing.example.net"},
				{"RESOLVES_TO", "close-hop.example.org", "192.0.2.17"},
				{"USES_CERT", "close-hop.example.org", spki},
			},
			steps:  ok,
			dialed: []string{"192.0.2.17:443", "192.0.2.18:443", "192.0.2.18:443"},
			requests: []string{"close-hop.example.org /robots.txt", "close-hop.example.org /",
				"closing.example.net /robots.txt", "closing.example.net /"},
		},
		{
			// robots.txt redirected to another host's, which disallows.
			host:     "robots-away.example.org",
			want:     []edge{{"RESOLVES_TO", "robots-away.example.org", "192.0.2.13"}, {"USES_CERT", "robots-away.example.org", spki}},
			steps:    map[string]string{"dns": "ok", "tls": "ok", "robots": "ok", "page": "robots_blocked"},
			dialed:   []string{"192.0.2.13:443", "192.0.2.4:443"},
			requests: []string{"robots-away.example.org /robots.txt", "blocked.example.com /robots.txt"},
		},
		{
			// Past five redirects robots.txt is unavailable: allow all.
			host: "robots-loop.example.org",
			want: []edge{
				{"LINKS_TO", "robots-loop.example.org", "b.example.net"},
				{"LINKS_TO", "robots-loop.example.org", "img.cdn.io"},
				{"LINKS_TO", "robots-loop.example.org", "www.example.com"},
				{"RESOLVES_TO", "robots-loop.example.org", "192.0.2.14"},
				{"USES_CERT", "robots-loop.example.org", spki},
			},
			steps:  map[string]string{"dns": "ok", "tls": "ok", "robots": "too_many_redirects", "page": "ok"},
			dialed: []string{"192.0.2.14:443"},
			requests: []string{"robots-loop.example.org /robots.txt", "robots-loop.example.org /robots.txt?x",
				"robots-loop.example.org /robots.txt?xx", "robots-loop.example.org /robots.txt?xxx",
				"robots-loop.example.org /robots.txt?xxxx", "robots-loop.example.org /robots.txt?xxxxx",
				"robots-loop.example.org /"},
		},
		{
			host:     "robots-503.example.org",
			want:     []edge{{"RESOLVES_TO", "robots-503.example.org", "192.0.2.15"}, {"USES_CERT", "robots-503.example.org", spki}},
			steps:    map[string]string{"dns": "ok", "tls": "ok", "robots": "http_503", "page": "robots_blocked"},
			dialed:   []string{"192.0.2.15:443"},
			requests: []string{"robots-503.example.org /robots.txt"},
		},
		{
			host: "robots-404.example.org",
			want: []edge{
				{"LINKS_TO", "robots-404.example.org", "b.example.net"},
				{"LINKS_TO", "robots-404.example.org", "img.cdn.io"},
				{"LINKS_TO", "robots-404.example.org", "www.example.com"},
				{"RESOLVES_TO", "robots-404.example.org", "192.0.2.16"},
				{"USES_CERT", "robots-404.example.org", spki},
			},
			steps:    map[string]string{"dns": "ok", "tls": "ok", "robots": "http_404", "page": "ok"},
			dialed:   []string{"192.0.2.16:443"},
			requests: []string{"robots-404.example.org /robots.txt", "robots-404.example.org /"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			f.mu.Lock()
			f.dialed, f.requests, f.conns = nil, nil, 0
			f.mu.Unlock()
			lim := &countingLimiter{}
			c := mustCrawler(t, f, func(c *crawl.Config) { c.AllowPrivate = tt.private; c.Limiter = lim })
			h, err := host.Parse(tt.host)
			if err != nil {
				t.Fatal(err)
			}
			r := c.Visit(t.Context(), h)
			if diff := cmp.Diff(tt.want, edgesOf(r)); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.steps, statuses(r)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\n%+v", diff, r.Outcome)
			}
			dialed, requests, conns := f.snapshot()
			if diff := cmp.Diff(tt.dialed, dialed); diff != "" {
				t.Errorf("dialed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.requests, requests); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if conns != len(tt.dialed) {
				t.Errorf("TLS connections = %d, want %d (one per host: robots.txt and page share it)", conns, len(tt.dialed))
			}
			waits := 0
			for _, n := range lim.waits {
				waits += n
			}
			if waits != len(tt.requests) {
				t.Errorf("limiter waits = %v, want one per request (%d)", lim.waits, len(tt.requests))
			}
			for _, e := range r.Edges {
				if e.Type == spyder.AliasOf && e.Source == e.Target {
					t.Errorf("self ALIAS_OF %v", e)
				}
				if e.ObservedAt != 1700000000 || e.ProbeID != "p1" || e.RunID != "r1" {
					t.Errorf("edge %v lacks observed_at/probe_id/run_id", e)
				}
			}
		})
	}
}

func TestCrawler_Probe_Nodes(t *testing.T) {
	f := mustFixture(t, fixtureRecords, fixtureCertNames, fixtureHandler())
	r := mustCrawler(t, f, nil).Visit(t.Context(), "a.example.com")
	var domains []string
	for _, d := range r.Domains {
		domains = append(domains, string(d.Host))
	}
	want := []string{"a.example.com", "ns1.dnshost.net", "mail.mx.org", "b.example.net", "img.cdn.io"}
	if diff := cmp.Diff(want, domains); diff != "" {
		t.Errorf("domain nodes (-want +got):\n%s", diff)
	}
	if got := r.Domains[0]; got.Apex != "example.com" || !slices.Equal(got.TXT, []string{"v=spf1 -all"}) {
		t.Errorf("probed host node = %+v, want apex example.com and TXT [v=spf1 -all]", got)
	}
	if len(r.IPs) != 2 || len(r.Certs) != 1 {
		t.Fatalf("IPs %v, certs %v: want 2 and 1", r.IPs, r.Certs)
	}
	cert := r.Certs[0]
	if cert.SubjectCN != "a.example.com" || cert.IssuerCN != "fixture CA" || !cert.Verified || len(cert.SANs) != len(fixtureCertNames) {
		t.Errorf("cert node = %+v", cert)
	}
	wantDisc := []host.Name{"ns1.dnshost.net", "mail.mx.org", "b.example.net", "www.example.com", "img.cdn.io"}
	if diff := cmp.Diff(wantDisc, r.Discovered); diff != "" {
		t.Errorf("Discovered (-want +got):\n%s", diff)
	}
}

func TestCrawler_Probe_BodyCap(t *testing.T) {
	f := mustFixture(t, fixtureRecords, fixtureCertNames, fixtureHandler())
	r := mustCrawler(t, f, func(c *crawl.Config) { c.BodyCap = 1000 }).Visit(t.Context(), "big.example.com")
	var links []string
	for _, e := range r.Edges {
		if e.Type == spyder.LinksTo {
			links = append(links, e.Target)
		}
	}
	if diff := cmp.Diff([]string{"before.example.org"}, links); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}
	if s := r.Outcome.Steps[3]; s.Status != "ok" || s.Detail != "truncated" {
		t.Errorf("page outcome = %+v, want ok/truncated", s)
	}
}

// TestCrawler_Probe_Hang checks that a host accepting connections and never
// answering is given up after ConnectTimeout, keeping its DNS edges.
func TestCrawler_Probe_Hang(t *testing.T) {
	f := mustFixture(t, fixtureRecords, fixtureCertNames, fixtureHandler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, ln.Addr().String())
	}
	c := mustCrawler(t, f, func(c *crawl.Config) {
		c.Dial, c.ConnectTimeout, c.HostTimeout = dial, 300*time.Millisecond, 2*time.Second
	})
	start := time.Now()
	r := c.Visit(t.Context(), "hang.example.com")
	if d := time.Since(start); d > time.Second {
		t.Errorf("Probe took %v, want about ConnectTimeout (300ms)", d)
	}
	if diff := cmp.Diff([]edge{{"RESOLVES_TO", "hang.example.com", "203.0.113.240"}}, edgesOf(r)); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
	if got := statuses(r)["tls"]; got != "timeout" {
		t.Errorf("tls outcome = %q, want timeout", got)
	}

	// Cancelling the caller's context ends a probe at once too.
	ctx, cancel := context.WithCancel(t.Context())
	c = mustCrawler(t, f, func(c *crawl.Config) { c.Dial = dial })
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	c.Visit(ctx, "hang.example.com")
	if d := time.Since(start); d > time.Second {
		t.Errorf("cancelled Probe took %v, want about 100ms", d)
	}
}

// TestCrawler_Probe_DNS checks the retry of unanswered queries and the TCP
// fallback for truncated answers.
func TestCrawler_Probe_DNS(t *testing.T) {
	records := []string{"flaky.example.com. 60 IN A 192.0.2.9", "flaky.example.com. 60 IN MX 5 mx.example.org."}
	var want []string
	for i := range 40 {
		txt := fmt.Sprintf("record %02d %s", i, strings.Repeat("t", 200))
		want = append(want, txt)
		records = append(records, fmt.Sprintf("bigtxt.example.com. 60 IN TXT %q", txt))
	}
	records = append(records, "bigtxt.example.com. 60 IN A 192.0.2.10")
	f := mustFixture(t, records, []string{"x.example.com"}, fixtureHandler())
	c := mustCrawler(t, f, func(c *crawl.Config) { c.DNSTimeout = 200 * time.Millisecond })

	r := c.Visit(t.Context(), "bigtxt.example.com")
	if diff := cmp.Diff(want, r.Domains[0].TXT); diff != "" {
		t.Errorf("TXT of a truncated answer (-want +got):\n%s", diff)
	}
	if got := statuses(r)["dns"]; got != "ok" {
		t.Errorf("dns outcome = %q, want ok", got)
	}

	r = c.Visit(t.Context(), "flaky.example.com")
	var dnsEdges []edge
	for _, e := range edgesOf(r) {
		if e.Type == spyder.ResolvesTo || e.Type == spyder.UsesMX {
			dnsEdges = append(dnsEdges, e)
		}
	}
	if diff := cmp.Diff([]edge{{"RESOLVES_TO", "flaky.example.com", "192.0.2.9"}, {"USES_MX", "flaky.example.com", "mx.example.org"}}, dnsEdges); diff != "" {
		t.Errorf("edges after retries (-want +got):\n%s", diff)
	}
	f.mu.Lock()
	drops := f.drops
	f.mu.Unlock()
	if drops != 10 {
		t.Errorf("flaky host got %d queries, want 10 (A, AAAA, NS, MX and TXT dropped, then retried)", drops)
	}

	// A resolver that never answers: the lookups time out after the
	// retries, and the probe reports it. With no answer at all, the CNAME
	// is not asked for on its own: the same silence would only double the
	// wait.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	c2, err := crawl.New(crawl.Config{Resolver: pc.LocalAddr().String(), DNSTimeout: 100 * time.Millisecond, DNSRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r = c2.Visit(t.Context(), "a.example.com")
	if got := statuses(r)["dns"]; got != "timeout" {
		t.Errorf("dns outcome with a silent resolver = %q, want timeout", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("probe with a silent resolver took %v, want about 2 × 100ms", d)
	}
	if n := countPackets(t, pc); n != 10 {
		t.Errorf("silent resolver got %d queries, want 10 (A, AAAA, NS, MX and TXT, twice)", n)
	}
}

// countPackets reads what pc has been sent and not read yet, and returns
// how many packets that was.
func countPackets(t *testing.T, pc net.PacketConn) int {
	t.Helper()
	buf := make([]byte, 64<<10)
	for n := 0; ; n++ {
		if err := pc.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := pc.ReadFrom(buf); err != nil {
			return n
		}
	}
}

// TestCrawler_Probe_Trickle checks that a server trickling its answer is
// given up after RequestTimeout, with the certificate kept.
func TestCrawler_Probe_Trickle(t *testing.T) {
	f := mustFixture(t, fixtureRecords, fixtureCertNames, fixtureHandler())
	c := mustCrawler(t, f, func(c *crawl.Config) { c.RequestTimeout, c.HostTimeout = 300*time.Millisecond, 5*time.Second })
	start := time.Now()
	r := c.Visit(t.Context(), "trickle.example.com")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Probe took %v, want about RequestTimeout (300ms)", d)
	}
	want := map[string]string{"dns": "ok", "tls": "ok", "robots": "timeout", "page": "timeout"}
	if diff := cmp.Diff(want, statuses(r)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if got := edgesOf(r); len(got) != 2 || got[1].Type != spyder.UsesCert {
		t.Errorf("edges = %v, want RESOLVES_TO and USES_CERT", got)
	}
}

// TestCrawler_Probe_UntypedPageKeepsItsCharset: a page served with no
// Content-Type is sniffed as HTML and then read in the charset its own
// <meta> declares (Shift_JIS here), not in the sniffer's guess of UTF-8, so
// its IDN link comes out right; and a gzip-coded empty robots.txt is no
// rules rather than unreadable.
func TestCrawler_Probe_UntypedPageKeepsItsCharset(t *testing.T) {
	sjis, err := japanese.ShiftJIS.NewEncoder().String(`<html><head><meta charset="Shift_JIS"></head><body><a href="https://日本.example.jp/">x</a></body></html>`)
	if err != nil {
		t.Fatal(err)
	}
	f := mustFixture(t, fixtureRecords, fixtureCertNames, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", "gzip")
			return
		}
		w.Header()["Content-Type"] = nil // no Content-Type: net/http would sniff one in
		io.WriteString(w, sjis)
	}))
	r := mustCrawler(t, f, nil).Visit(t.Context(), "a.example.com")
	var links []string
	for _, e := range r.Edges {
		if e.Type == spyder.LinksTo {
			links = append(links, e.Target)
		}
	}
	if want := []string{"xn--wgv71a.example.jp"}; !slices.Equal(links, want) {
		t.Errorf("links %v, want %v; outcome %+v", links, want, r.Outcome.Steps)
	}
	if page := r.Outcome.PageOutcome(); page != spyder.StatusOK {
		t.Errorf("page step %q, want ok (an empty gzip robots.txt has no rules); steps %+v", page, r.Outcome.Steps)
	}
}
