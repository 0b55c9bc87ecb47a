package crawltest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	"golang.org/x/net/html"

	"github.com/spyder-crawler/spyder"
	hostname "github.com/spyder-crawler/spyder/host"
)

func spkiOf(c *x509.Certificate) string {
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(sum[:])
}

// extract is an independent reading of the contract's link rule, over
// parsed HTML rather than the generator's link list.
func extract(body []byte, page *url.URL) []string {
	doc, err := html.Parse(strings.NewReader(string(body)))
	if err != nil {
		return nil
	}
	base := page
	var vals []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Namespace == "" {
			want := map[string]string{"a": "href", "link": "href", "script": "src", "img": "src", "iframe": "src", "source": "src", "base": "href"}[n.Data]
			for _, a := range n.Attr {
				if a.Key != want || a.Namespace != "" {
					continue
				}
				if n.Data == "base" {
					if base == page {
						if b, err := page.Parse(a.Val); err == nil {
							base = b
						}
					}
					continue
				}
				vals = append(vals, a.Val)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	set := map[string]bool{}
	for _, v := range vals {
		if h, ok := resolveLink(base, v); ok {
			set[h] = true
		}
	}
	var out []string
	for h := range set {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// TestPagesParseAsPlanned parses every page of a world as a crawler would
// (the first 512 KiB) and checks the hosts found are the plan's.
func TestPagesParseAsPlanned(t *testing.T) {
	p, err := newPlan(Options{Hosts: 1500, Seed: 21})
	if err != nil {
		t.Fatal(err)
	}
	var big, based, decoys int
	for _, h := range sortedKeys(p.sites) {
		s := p.sites[h]
		body := []byte(s.pageBody())
		if s.page == pageBig {
			big++
			if len(body) <= bodyCap+64<<10 {
				t.Errorf("%s: big page is only %d bytes", h, len(body))
			}
			full := extract(body, mustURL("https://"+h+"/"))
			for _, l := range s.beyond {
				hb, _ := resolveLink(mustURL("https://"+h+"/"), l.val)
				if !slices.Contains(full, hb) {
					t.Errorf("%s: link %s past the cap not in the page", h, hb)
				}
			}
			body = body[:bodyCap]
		}
		if s.base != "" {
			based++
		}
		decoys += len(s.decoys)
		got := extract(body, mustURL("https://"+h+"/"))
		if diff := cmp.Diff(s.linkHosts, got); diff != "" {
			t.Errorf("%s (%s): link hosts differ (-plan +parsed):\n%s\n%s", h, s.page, diff, body)
		}
	}
	if big == 0 || based == 0 || decoys == 0 {
		t.Errorf("%d big pages, %d with <base>, %d decoys: want some of each", big, based, decoys)
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// refCrawler is a small, sequential-per-host reading of the contract used
// to check that the servers behave as the plan (and so Expected) says.
type refCrawler struct {
	w       *World
	timeout time.Duration
}

func (rc *refCrawler) lookup(ctx context.Context, host string, t uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), t)
	m.SetEdns0(4096, false)
	// The probe's deadline bounds the lookups too; 10 s leaves room for an
	// answer of 1,000 records over TCP at load 17 under -race (2 s did not).
	c := &dns.Client{Timeout: 10 * time.Second}
	r, _, err := c.ExchangeContext(ctx, m, rc.w.Resolver)
	if err == nil && r.Truncated {
		c.Net = "tcp"
		r, _, err = c.ExchangeContext(ctx, m, rc.w.Resolver)
	}
	return r, err
}

func (rc *refCrawler) probe(host string, addEdge func(spyder.Edge)) error {
	add := func(typ, target string) { addEdge(spyder.Edge{Type: typ, Source: host, Target: target}) }
	ctx, cancel := context.WithTimeout(context.Background(), rc.timeout)
	defer cancel()
	if _, err := hostname.Parse(host); err != nil {
		return err
	}
	types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeNS, dns.TypeMX, dns.TypeCNAME}
	msgs := make([]*dns.Msg, len(types))
	errs := make([]error, len(types))
	var wg sync.WaitGroup
	for i, typ := range types {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs[i], errs[i] = rc.lookup(ctx, host, typ)
		}()
	}
	wg.Wait()
	answers := map[uint16]*dns.Msg{}
	for i, typ := range types {
		if errs[i] != nil {
			return fmt.Errorf("dns: %w", errs[i])
		}
		if msgs[i].Rcode == dns.RcodeNameError {
			return nil
		}
		answers[typ] = msgs[i]
	}
	var addrs []netip.Addr
	for _, typ := range []uint16{dns.TypeA, dns.TypeAAAA} {
		for _, rr := range answers[typ].Answer {
			var ip net.IP
			switch v := rr.(type) {
			case *dns.A:
				ip = v.A
			case *dns.AAAA:
				ip = v.AAAA
			default:
				continue
			}
			a, _ := netip.AddrFromSlice(ip)
			a = a.Unmap()
			addrs = append(addrs, a)
			add(spyder.ResolvesTo, a.String())
		}
	}
	for _, rr := range answers[dns.TypeNS].Answer {
		if v, ok := rr.(*dns.NS); ok && normName(v.Hdr.Name) == host {
			add(spyder.UsesNS, normName(v.Ns))
		}
	}
	for _, rr := range answers[dns.TypeMX].Answer {
		if v, ok := rr.(*dns.MX); ok && normName(v.Hdr.Name) == host && v.Mx != "." {
			add(spyder.UsesMX, normName(v.Mx))
		}
	}
	for _, rr := range answers[dns.TypeCNAME].Answer {
		if v, ok := rr.(*dns.CNAME); ok && normName(v.Hdr.Name) == host && normName(v.Target) != host {
			add(spyder.AliasOf, normName(v.Target))
		}
	}
	if excludedTLDs[host[strings.LastIndexByte(host, '.')+1:]] {
		return nil
	}
	conn, err := rc.connect(ctx, host, addrs, "https")
	if conn == nil {
		return err
	}
	defer conn.Close()
	leaf := conn.(*tls.Conn).ConnectionState().PeerCertificates[0]
	add(spyder.UsesCert, spkiOf(leaf))

	hc := &hostConn{conn: conn, br: bufio.NewReader(conn), host: host, scheme: "https"}
	allowed, err := robotsAllows(ctx, hc, host)
	if err != nil || !allowed {
		return err
	}
	u := mustURL("https://" + host + "/")
	checked := map[string]bool{host: true}
	for hop := 0; ; hop++ {
		h := u.Hostname()
		if hc.host != h || hc.scheme != u.Scheme {
			if hc.conn != conn {
				hc.conn.Close()
			}
			r, err := rc.lookup(ctx, h, dns.TypeA)
			if err != nil || r.Rcode != dns.RcodeSuccess {
				return err
			}
			var as []netip.Addr
			for _, rr := range r.Answer {
				if v, ok := rr.(*dns.A); ok {
					a, _ := netip.AddrFromSlice(v.A)
					as = append(as, a.Unmap())
				}
			}
			c, err := rc.connect(ctx, h, as, u.Scheme)
			if c == nil {
				return err
			}
			hc = &hostConn{conn: c, br: bufio.NewReader(c)}
		}
		hc.host, hc.scheme = h, u.Scheme
		if !checked[h] {
			checked[h] = true
			if ok, err := robotsAllows(ctx, hc, h); err != nil || !ok {
				return err
			}
		}
		resp, body, err := hc.get(ctx, h, u.RequestURI(), bodyCap)
		if err != nil {
			return err
		}
		if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 && loc != "" {
			if hop+1 > maxRedirects {
				return nil
			}
			if u, err = u.Parse(loc); err != nil {
				return nil
			}
			if apexOf(u.Hostname()) != apexOf(h) {
				addEdge(spyder.Edge{Type: spyder.RedirectsTo, Source: h, Target: u.Hostname()})
			}
			continue
		}
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if resp.StatusCode/100 != 2 || (mt != "text/html" && mt != "application/xhtml+xml") {
			return nil
		}
		apex := apexOf(host)
		for _, l := range extract(body, u) {
			if apexOf(l) != apex {
				add(spyder.LinksTo, l)
			}
		}
		if hc.conn != conn {
			hc.conn.Close()
		}
		return nil
	}
}

// connect dials the first public address that answers, with TLS for https.
func (rc *refCrawler) connect(ctx context.Context, host string, addrs []netip.Addr, scheme string) (net.Conn, error) {
	port := uint16(443)
	if scheme == "http" {
		port = 80
	}
	for _, a := range addrs {
		if !public(a) {
			continue
		}
		c, err := rc.w.Dial(ctx, "tcp", netip.AddrPortFrom(a, port).String())
		if err != nil {
			continue
		}
		if dl, ok := ctx.Deadline(); ok {
			c.SetDeadline(dl)
		}
		if scheme == "http" {
			return c, nil
		}
		tc := tls.Client(c, &tls.Config{ServerName: host, InsecureSkipVerify: true})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}
	return nil, nil
}

type hostConn struct {
	conn         net.Conn
	br           *bufio.Reader
	host, scheme string
}

func (hc *hostConn) get(ctx context.Context, host, path string, limit int64) (*http.Response, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+host+path, nil)
	req.Header.Set("User-Agent", "github.com/spyder-crawler/spyder/test (+https://example.invalid)")
	if err := req.Write(hc.conn); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(hc.br, req)
	if err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, nil, err
	}
	io.CopyN(io.Discard, resp.Body, 64<<10) // keep the connection usable (if the body was short)
	return resp, body, nil
}

// robotsAllows fetches robots.txt and says whether "/" is allowed for
// spyder: groups for "spyder" else "*", longest match, 4xx allows, 5xx
// disallows.
func robotsAllows(ctx context.Context, hc *hostConn, host string) (bool, error) {
	resp, body, err := hc.get(ctx, host, "/robots.txt", 1<<20)
	if err != nil {
		return false, err
	}
	switch {
	case resp.StatusCode >= 500:
		return false, nil
	case resp.StatusCode >= 400:
		return true, nil
	}
	type rule struct {
		allow bool
		path  string
	}
	groups := map[string][]rule{}
	var agents []string
	inRules := false
	for _, line := range strings.Split(string(body), "\n") {
		line, _, _ = strings.Cut(line, "#")
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		switch k {
		case "user-agent":
			if inRules {
				agents, inRules = nil, false
			}
			agents = append(agents, strings.ToLower(v))
			if groups[strings.ToLower(v)] == nil {
				groups[strings.ToLower(v)] = []rule{}
			}
		case "allow", "disallow":
			inRules = true
			for _, a := range agents {
				if v != "" {
					groups[a] = append(groups[a], rule{k == "allow", v})
				}
			}
		default:
			inRules = true
		}
	}
	rules, ok := groups["spyder"]
	if !ok {
		rules = groups["*"]
	}
	best, allowed := -1, true
	for _, r := range rules {
		if strings.HasPrefix("/", r.path) && len(r.path) > best {
			best, allowed = len(r.path), r.allow
		}
	}
	return allowed, nil
}

// TestReferenceCrawlMatchesExpected crawls a world with the reference
// crawler and checks it emits exactly Expected: the servers, the DNS and
// the plan agree.
func TestReferenceCrawlMatchesExpected(t *testing.T) {
	w := Start(t, Options{Hosts: 600, Seed: 31, SlowFraction: 0.03, HTTPLatency: 5 * time.Millisecond, DNSLatency: 2 * time.Millisecond})
	// Generous, and 16 at once: the machine is shared, and under -race at
	// load 17 an 8 s deadline with 64 at once was too short for a few
	// honest hosts (the slow ones cost the whole deadline).
	rc := &refCrawler{w: w, timeout: 20 * time.Second}
	edges, _ := rc.crawl(w.Seeds, 16)
	if diff := cmp.Diff(w.Expected, edges); diff != "" {
		t.Errorf("reference crawl differs from Expected (-want +got):\n%s", diff)
	}
	if len(edges) == 0 {
		t.Fatal("no edges")
	}
	// Nothing was fetched from a host robots.txt blocks, and robots.txt
	// came before "/" on the same connection.
	blocked := map[string]bool{}
	for _, h := range w.Blocked {
		blocked[h] = true
	}
	robotsOn := map[string]bool{}
	for _, r := range w.Requests() {
		if r.Path == "/robots.txt" {
			robotsOn[r.Host] = true
		}
		if r.Path == "/" && blocked[r.Host] {
			t.Errorf("%s: / fetched although robots.txt blocks it", r.Host)
		}
		if r.Path == "/" && !robotsOn[r.Host] {
			t.Errorf("%s: / fetched on %s without robots.txt first", r.Host, r.Conn)
		}
	}
}

// crawl probes hosts with n workers and returns the edges, sorted, and how
// long each probe took.
func (rc *refCrawler) crawl(hosts []string, n int) ([]spyder.Edge, map[string]time.Duration) {
	var mu sync.Mutex
	got := map[spyder.Edge]bool{}
	took := map[string]time.Duration{}
	ch := make(chan string)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range ch {
				start := time.Now()
				rc.probe(h, func(e spyder.Edge) {
					mu.Lock()
					got[e] = true
					mu.Unlock()
				})
				mu.Lock()
				took[h] = time.Since(start)
				mu.Unlock()
			}
		}()
	}
	for _, h := range hosts {
		ch <- h
	}
	close(ch)
	wg.Wait()
	var edges []spyder.Edge
	for e := range got {
		edges = append(edges, e)
	}
	sortEdges(edges)
	return edges, took
}

// TestHostile crawls the hostile hosts among ordinary ones: each probe
// ends by its deadline with the planned edges, and the ordinary hosts
// still give exactly Expected.
func TestHostile(t *testing.T) {
	w := Start(t, Options{Hosts: 100, Seed: 41, Hostile: true})
	if len(w.Hostile) != len(hostileOutcomes) {
		t.Fatalf("%d hostile hosts, want %d", len(w.Hostile), len(hostileOutcomes))
	}
	// The 100,000-link page is read up to the cap within 6 s on an idle
	// machine, not at load 17 under -race; the hosts that never end cost
	// the whole deadline.
	const timeout = 20 * time.Second
	rc := &refCrawler{w: w, timeout: timeout}
	start := time.Now()
	edges, took := rc.crawl(append(append([]string(nil), w.Hostile...), w.Seeds...), 32)
	t.Logf("crawl of %d hosts took %v", len(w.Hostile)+len(w.Seeds), time.Since(start))
	want := append(append([]spyder.Edge(nil), w.Expected...), w.HostileExpected...)
	sortEdges(want)
	if diff := cmp.Diff(want, edges); diff != "" {
		if len(diff) > 4000 {
			diff = diff[:4000]
		}
		t.Errorf("crawl differs from Expected+HostileExpected (-want +got):\n%s", diff)
	}
	for _, h := range w.Hostile {
		if took[h] > timeout+time.Second {
			t.Errorf("%s: probe took %v, deadline %v", h, took[h], timeout)
		}
		t.Logf("%-40q %-26s %5d edges, %v", h, w.HostileOutcome[h], countSource(w.HostileExpected, h), took[h].Round(time.Millisecond))
	}
	if n := countSource(w.HostileExpected, hostManyLinks); n < 10000 {
		t.Errorf("100k-links page gives %d edges, want the ~11,000 links before the cap", n)
	}
	if n := countSource(w.HostileExpected, hostDNS1000); n < dnsRecords {
		t.Errorf("1,000-record host gives %d edges", n)
	}
}

func countSource(es []spyder.Edge, src string) int {
	n := 0
	for _, e := range es {
		if e.Source == src {
			n++
		}
	}
	return n
}

// BenchmarkReferenceCrawl crawls the performance world (10,000
// hosts, 20 ms DNS and 50 ms HTTP latency, 3% slow) with the reference
// crawler, a minimal client (parallel DNS, one handshake, robots.txt and
// the page), as a baseline for the crawl package's figures on the same
// machine. The world and the client share the cores.
func BenchmarkReferenceCrawl(b *testing.B) {
	for _, c := range []struct {
		workers int
		timeout time.Duration
	}{{256, 10 * time.Second}, {1024, 5 * time.Second}} {
		b.Run(fmt.Sprintf("workers=%d/timeout=%v", c.workers, c.timeout), func(b *testing.B) {
			w := Start(b, Options{Hosts: 10000, Seed: 1, SlowFraction: 0.03,
				DNSLatency: 20 * time.Millisecond, HTTPLatency: 50 * time.Millisecond, NoRequestLog: true})
			if err := w.Warm(); err != nil {
				b.Fatal(err)
			}
			rc := &refCrawler{w: w, timeout: c.timeout}
			var edges []spyder.Edge
			b.ResetTimer()
			for b.Loop() {
				edges, _ = rc.crawl(w.Seeds, c.workers)
			}
			b.StopTimer()
			b.ReportMetric(float64(len(w.Seeds)*b.N)/b.Elapsed().Seconds(), "hosts/s")
			want := map[spyder.Edge]bool{}
			for _, e := range w.Expected {
				want[e] = true
			}
			var hit int
			for _, e := range edges {
				if want[e] {
					hit++
				}
			}
			b.ReportMetric(100*float64(hit)/float64(len(w.Expected)), "%recall")
		})
	}
}

// TestExpectedForDiscoveredHosts probes hosts a continuous crawl would
// discover (name servers, mail hosts, CNAME targets, linked hosts) and
// checks them against ExpectedFor.
func TestExpectedForDiscoveredHosts(t *testing.T) {
	w := Start(t, Options{Hosts: 200, Seed: 17})
	edges, outcomes := w.ExpectedFor(w.Seeds)
	if !cmp.Equal(edges, w.Expected) || !cmp.Equal(outcomes, w.PageOutcome) {
		t.Fatal("ExpectedFor(Seeds) differs from Expected and PageOutcome")
	}
	found := map[string]bool{}
	for _, e := range w.Expected {
		if e.Type != spyder.ResolvesTo && e.Type != spyder.UsesCert && !slices.Contains(w.Seeds, e.Target) {
			found[e.Target] = true
		}
	}
	hosts := sortedKeys(found)
	if len(hosts) < 100 {
		t.Fatalf("only %d discovered hosts", len(hosts))
	}
	want, outcomes := w.ExpectedFor(hosts)
	rc := &refCrawler{w: w, timeout: 20 * time.Second} // as TestReferenceCrawlMatchesExpected
	got, _ := rc.crawl(hosts, 16)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("crawl of %d discovered hosts differs from ExpectedFor (-want +got):\n%s", len(hosts), diff)
	}
	statuses := map[string]int{}
	for _, st := range outcomes {
		statuses[st]++
	}
	t.Logf("%d discovered hosts, %d edges, page outcomes %v", len(hosts), len(want), statuses)
}
