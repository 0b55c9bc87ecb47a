package crawltest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"

	"github.com/spyder-crawler/spyder"
)

func TestPlanIsDeterministic(t *testing.T) {
	o := Options{Hosts: 500, Seed: 7, SlowFraction: 0.05}
	a, err := newPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a.seeds, b.seeds); diff != "" {
		t.Errorf("seeds differ for the same options (-a +b):\n%s", diff)
	}
	ea, oa, ca := a.expected()
	eb, ob, cb := b.expected()
	if diff := cmp.Diff(ea, eb); diff != "" {
		t.Errorf("Expected differs for the same options (-a +b):\n%s", diff)
	}
	if !cmp.Equal(oa, ob) || !cmp.Equal(ca, cb) {
		t.Error("page outcomes or certificate nodes differ for the same options")
	}
	for _, h := range sortedKeys(a.names) {
		if da, db := a.describe(h), b.describe(h); da != db {
			t.Fatalf("%s differs:\n%s\n%s", h, da, db)
		}
	}
	o.Seed = 8
	c, err := newPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a.seeds, c.seeds) {
		t.Error("seeds 7 and 8 gave the same world")
	}
}

// TestWorldMix checks that a world of the size the crawl tests use holds
// every hard case the world holds, and every edge type.
func TestWorldMix(t *testing.T) {
	p, err := newPlan(Options{Hosts: 2000, Seed: 1, SlowFraction: 0.03})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, h := range p.seeds {
		kinds[p.kinds[h]]++
	}
	for _, k := range []string{"apex", "subdomain", "www-cname", "cdn-cname", "cname-loop", "cname-self",
		"cname-dangling", "nxdomain", "private", "private-and-public", "no-address", "excluded-tld",
		"refused", "refused-then-served", "gov.uk", "idn", "hang", "trickle-forever", "slow"} {
		if kinds[k] == 0 {
			t.Errorf("no seed of kind %s: %v", k, kinds)
		}
	}
	robots, pages, certs := map[string]int{}, map[pageKind]int{}, map[certKind]int{}
	for _, h := range p.seeds {
		if s := p.sites[h]; s != nil {
			robots[robotsVariants[s.robots].name]++
			pages[s.page]++
			certs[s.cert]++
		}
	}
	for _, v := range robotsVariants {
		if robots[v.name] == 0 {
			t.Errorf("no seed with robots.txt %s", v.name)
		}
	}
	for k := pageKind(0); k < pageKinds; k++ {
		if pages[k] == 0 {
			t.Errorf("no seed with page %s", k)
		}
	}
	for k := certValid; k <= certWrongName; k++ {
		if certs[k] == 0 {
			t.Errorf("no seed with certificate %s", k)
		}
	}
	types := map[string]int{}
	edges, outcomes, _ := p.expected()
	for _, e := range edges {
		types[e.Type]++
	}
	for _, typ := range []string{"RESOLVES_TO", "USES_NS", "ALIAS_OF", "USES_MX", "LINKS_TO", "USES_CERT"} {
		if types[typ] == 0 {
			t.Errorf("no %s edge expected", typ)
		}
	}
	statuses := map[string]int{}
	for _, st := range outcomes {
		statuses[st]++
	}
	for _, st := range []string{"nxdomain", "excluded", "private_address", "robots_blocked", "too_many_redirects",
		"not_html", "http_503", "http_500", "http_404", "ok", "timeout", "no_address", "connect_error", "tls_error"} {
		if statuses[st] == 0 {
			t.Errorf("no seed whose page ends %s: %v", st, statuses)
		}
	}
	t.Logf("kinds %v\nedges %v\npage outcomes %v", kinds, types, statuses)
}

func TestStartTime(t *testing.T) {
	for _, n := range []int{2000, 10000} {
		start, cpu := time.Now(), processCPU()
		w := Start(t, Options{Hosts: n, Seed: 3, SlowFraction: 0.03})
		d, used := time.Since(start), processCPU()-cpu
		t.Logf("%d hosts: Start took %v, %v of CPU (%d names, %d sites, %d certificates, %d expected edges)",
			n, d, used, len(w.plan.names), len(w.plan.sites), len(w.plan.certs), len(w.Expected))
		// The contract asks for well under a second per 1,000 hosts; the
		// bound is twice that for -race. It holds the CPU time used, not
		// the wall clock, which other processes on a shared machine
		// lengthen as they please (8 s for 2,000 hosts at load 14, of
		// which 0.7 s of CPU).
		if limit := 2 * time.Duration(n) * time.Millisecond; used > limit {
			t.Errorf("%d hosts took %v of CPU to start, want under %v", n, used, limit)
		}
	}
}

func query(t *testing.T, c *dns.Client, server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(4096, false)
	r, _, err := c.Exchange(m, server)
	if err != nil {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return r
}

// TestDNSAnswersThePlan queries every seed for every type, over UDP and
// TCP, and compares with the plan as the contract reads answers.
func TestDNSAnswersThePlan(t *testing.T) {
	w := Start(t, Options{Hosts: 300, Seed: 11})
	for _, netw := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: netw, Timeout: 2 * time.Second}
		for _, h := range w.Seeds {
			r := w.plan.names[h]
			a := query(t, c, w.Resolver, h, dns.TypeA)
			if r == nil {
				if a.Rcode != dns.RcodeNameError {
					t.Errorf("%s: rcode %s, want NXDOMAIN", h, dns.RcodeToString[a.Rcode])
				}
				continue
			}
			if a.Rcode != dns.RcodeSuccess || !a.Authoritative {
				t.Errorf("%s: rcode %s aa=%v", h, dns.RcodeToString[a.Rcode], a.Authoritative)
			}
			var got []netip.Addr
			for _, typ := range []uint16{dns.TypeA, dns.TypeAAAA} {
				for _, rr := range query(t, c, w.Resolver, h, typ).Answer {
					switch rr := rr.(type) {
					case *dns.A:
						got = append(got, netip.MustParseAddr(rr.A.String()))
					case *dns.AAAA:
						got = append(got, netip.MustParseAddr(rr.AAAA.String()))
					}
				}
			}
			if want := w.plan.lookup(h); !slices.Equal(got, want) {
				t.Errorf("%s: addresses %v, want %v", h, got, want)
			}
			var ns, mx, cname []string
			for _, rr := range query(t, c, w.Resolver, h, dns.TypeNS).Answer {
				if v, ok := rr.(*dns.NS); ok && normName(rr.Header().Name) == h {
					ns = append(ns, normName(v.Ns))
				}
			}
			for _, rr := range query(t, c, w.Resolver, h, dns.TypeMX).Answer {
				if v, ok := rr.(*dns.MX); ok && normName(rr.Header().Name) == h {
					mx = append(mx, v.Mx)
				}
			}
			for _, rr := range query(t, c, w.Resolver, h, dns.TypeCNAME).Answer {
				cname = append(cname, normName(rr.(*dns.CNAME).Target))
			}
			var wantNS, wantMX, wantCNAME []string
			for _, n := range r.ns {
				wantNS = append(wantNS, normName(n))
			}
			for _, m := range r.mx {
				wantMX = append(wantMX, dns.Fqdn(m.host))
			}
			if r.cname != "" {
				wantCNAME = []string{r.cname}
			}
			if !slices.Equal(ns, wantNS) || !slices.Equal(mx, wantMX) || !slices.Equal(cname, wantCNAME) {
				t.Errorf("%s: ns %v mx %v cname %v, want %v %v %v", h, ns, mx, cname, wantNS, wantMX, wantCNAME)
			}
			txt := query(t, c, w.Resolver, h, dns.TypeTXT)
			var n int
			for _, rr := range txt.Answer {
				if v, ok := rr.(*dns.TXT); ok && normName(rr.Header().Name) == h {
					if !slices.Equal(v.Txt, r.txt[n]) {
						t.Errorf("%s: TXT %q, want %q", h, v.Txt, r.txt[n])
					}
					n++
				}
			}
			if n != len(r.txt) && r.cname == "" {
				t.Errorf("%s: %d TXT records, want %d", h, n, len(r.txt))
			}
		}
	}
}

func TestDNSLatencyIsPerRequest(t *testing.T) {
	const lat = 100 * time.Millisecond
	w := Start(t, Options{Hosts: 50, Seed: 2, DNSLatency: lat})
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	start := time.Now()
	var wg sync.WaitGroup
	for _, h := range w.Seeds[:40] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(h), dns.TypeA)
			if _, _, err := c.Exchange(m, w.Resolver); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	if d < lat || d > 20*lat {
		t.Errorf("40 parallel queries with %v latency took %v: want the latency once, not serialised", lat, d)
	}
}

func TestDNSCNAMELoopAndSelf(t *testing.T) {
	w := Start(t, Options{Hosts: 3000, Seed: 5})
	c := &dns.Client{Timeout: 2 * time.Second}
	var loops, selfs int
	for _, h := range w.Seeds {
		switch w.plan.kinds[h] {
		case "cname-loop":
			loops++
			r := query(t, c, w.Resolver, h, dns.TypeA)
			if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 2 {
				t.Errorf("%s: loop answered %s %v, want NOERROR and two CNAMEs", h, dns.RcodeToString[r.Rcode], r.Answer)
			}
		case "cname-self":
			selfs++
			r := query(t, c, w.Resolver, h, dns.TypeA)
			if len(r.Answer) != 1 || normName(r.Answer[0].(*dns.CNAME).Target) != h {
				t.Errorf("%s: self CNAME answered %v", h, r.Answer)
			}
		}
	}
	if loops == 0 || selfs == 0 {
		t.Fatalf("world has %d loop and %d self CNAMEs", loops, selfs)
	}
}

func TestDialRefusesOutsideTheWorld(t *testing.T) {
	w := Start(t, Options{Hosts: 10, Seed: 1})
	ctx := context.Background()
	for _, addr := range []string{"10.1.2.3:443", "127.0.0.1:443", "169.254.169.254:80", "[fc00::1]:443",
		"8.8.8.8:443", "192.0.2.1:22", "example.com:443", "192.0.2.201:443", w.Resolver} {
		c, err := w.Dial(ctx, "tcp", addr)
		if !errors.Is(err, ErrUnreachable) {
			if c != nil {
				c.Close()
			}
			t.Errorf("Dial(%s) = %v, want ErrUnreachable", addr, err)
		}
	}
	if _, err := w.Dial(ctx, "udp", "192.0.2.1:443"); !errors.Is(err, ErrUnreachable) {
		t.Errorf("Dial udp = %v, want ErrUnreachable", err)
	}
	if got := len(w.Refused()); got != 10 {
		t.Errorf("Refused() has %d addresses, want 10: %v", got, w.Refused())
	}
	if _, err := w.Dial(ctx, "tcp", downIPs[0]+":443"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Dial(down) = %v, want ECONNREFUSED", err)
	}
	c, err := w.Dial(ctx, "tcp", hangIPs[0]+":443")
	if err != nil {
		t.Fatalf("Dial(hang) = %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	var ne net.Error
	if _, err := c.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("read from a hanging host = %v, want a timeout", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.Dial(ctx, "tcp", "192.0.2.1:443"); err == nil {
		t.Error("Dial with a cancelled context succeeded")
	}
}

// TestCertificates handshakes with every seed that serves TLS and checks
// the certificate verifies exactly when the plan says so.
func TestCertificates(t *testing.T) {
	w := Start(t, Options{Hosts: 400, Seed: 9})
	if err := w.Warm(); err != nil {
		t.Fatal(err)
	}
	seen := map[certKind]int{}
	var fails, shared int
	for _, h := range w.Seeds {
		s := w.plan.sites[h]
		if s == nil || !slices.ContainsFunc(w.plan.lookup(h), public) || w.plan.reach(w.plan.lookup(h)) != "" {
			continue
		}
		var addr netip.Addr
		for _, a := range w.plan.lookup(h) {
			if public(a) && w.plan.ips[a] == ipServe {
				addr = a
				break
			}
		}
		raw, err := w.Dial(context.Background(), "tcp", netip.AddrPortFrom(addr, 443).String())
		if err != nil {
			t.Fatal(err)
		}
		c := tls.Client(raw, &tls.Config{ServerName: h, InsecureSkipVerify: true})
		c.SetDeadline(time.Now().Add(5 * time.Second))
		err = c.Handshake()
		if s.tlsFail {
			fails++
			if err == nil {
				t.Errorf("%s: handshake succeeded, plan says it fails", h)
			}
			c.Close()
			continue
		}
		if err != nil {
			t.Fatalf("%s: handshake: %v", h, err)
		}
		leaf := c.ConnectionState().PeerCertificates[0]
		c.Close()
		if got := spkiOf(leaf); got != s.spec.spki {
			t.Errorf("%s: SPKI %s, plan %s", h, got, s.spec.spki)
		}
		_, verr := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: w.RootCAs, CurrentTime: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)})
		if (verr == nil) != (s.cert == certValid) {
			t.Errorf("%s: certificate %s, verify error %v", h, s.cert, verr)
		}
		seen[s.cert]++
		if len(leaf.DNSNames) > 1 {
			shared++
		}
	}
	if len(seen) != 4 || fails == 0 || shared == 0 {
		t.Errorf("certificates seen %v, %d handshake failures, %d shared: want every kind", seen, fails, shared)
	}
}

// TestNoGoroutineLeft runs a world with a request on a trickling host and
// a connection to a hanging one in flight, then checks cleanup ends every
// goroutine it started.
func TestNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Run("world", func(t *testing.T) {
		w := Start(t, Options{Hosts: 300, Seed: 4, SlowFraction: 0.3, DNSLatency: 50 * time.Millisecond, Hostile: true})
		var trickle, hang string
		for _, h := range w.Seeds {
			switch w.plan.kinds[h] {
			case "trickle-forever":
				trickle = h
			case "hang":
				hang = h
			}
		}
		c, err := w.Dial(context.Background(), "tcp", w.plan.lookup(hang)[0].String()+":443")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		raw, err := w.Dial(context.Background(), "tcp", w.plan.lookup(trickle)[0].String()+":443")
		if err != nil {
			t.Fatal(err)
		}
		tc := tls.Client(raw, &tls.Config{ServerName: trickle, InsecureSkipVerify: true})
		t.Cleanup(func() { tc.Close() })
		if _, err := tc.Write([]byte("GET /robots.txt HTTP/1.1\r\nHost: " + trickle + "\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if _, err := tc.Read(buf); err != nil {
			t.Fatal(err)
		}
		// Hostile answers in flight: a body that never ends, 1 GiB, a
		// byte a second.
		for _, h := range []string{hostNeverCloses, hostGigabyte, hostTrickle} {
			raw, err := w.Dial(context.Background(), "tcp", w.plan.lookup(h)[0].String()+":443")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { raw.Close() })
			if h == hostTrickle {
				continue
			}
			c := tls.Client(raw, &tls.Config{ServerName: h, InsecureSkipVerify: true})
			if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: " + h + "\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Read(buf); err != nil {
				t.Fatal(err)
			}
		}
		// A DNS query still sleeping when the world stops, and one that is
		// never answered.
		go func() {
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(hostSilentDNS), dns.TypeA)
			(&dns.Client{Timeout: time.Second}).Exchange(m, w.Resolver)
		}()
		go func() {
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(trickle), dns.TypeA)
			(&dns.Client{Timeout: time.Second}).Exchange(m, w.Resolver)
		}()
		time.Sleep(10 * time.Millisecond)
	})
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%d goroutines after cleanup, %d before:\n%s", n, before, trimStacks(string(buf)))
	}
}

func trimStacks(s string) string {
	var keep []string
	for _, g := range strings.Split(s, "\n\n") {
		if strings.Contains(g, "crawltest") || strings.Contains(g, "miekg") || strings.Contains(g, "net/http") {
			keep = append(keep, g)
		}
	}
	return strings.Join(keep, "\n\n")
}

// TestHTTPServesThePlan asks every site of a world for robots.txt and "/"
// over https and http and checks the answers against the plan's routes,
// the latency and the request log.
func TestHTTPServesThePlan(t *testing.T) {
	const lat = 20 * time.Millisecond
	w := Start(t, Options{Hosts: 200, Seed: 13, HTTPLatency: lat})
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, _ := net.SplitHostPort(addr)
		for _, a := range w.plan.lookup(host) {
			if c, err := w.Dial(ctx, network, net.JoinHostPort(a.String(), port)); err == nil {
				return c, nil
			}
		}
		return nil, errors.New("no address")
	}
	client := &http.Client{
		Transport:     &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       15 * time.Second, // generous: the machine is shared
	}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var checked int
	sites := make(chan *site)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range sites {
				for _, scheme := range []string{"https", "http"} {
					if checkSite(t, client, scheme, s, lat) {
						mu.Lock()
						checked++
						mu.Unlock()
					}
				}
			}
		}()
	}
	for _, h := range sortedKeys(w.plan.sites) {
		s := w.plan.sites[h]
		if s.trickle || s.tlsFail || !slices.ContainsFunc(w.plan.lookup(h), public) || w.plan.reach(w.plan.lookup(h)) != "" {
			continue
		}
		sites <- s
	}
	close(sites)
	wg.Wait()
	if checked < 250 {
		t.Errorf("only %d sites checked", checked)
	}
	reqs := w.Requests()
	if len(reqs) != 2*checked || w.RequestCount() != len(reqs) {
		t.Errorf("%d requests recorded, %d made", len(reqs), 2*checked)
	}
	conns := map[string]bool{}
	for _, r := range reqs {
		if r.UserAgent == "" || r.Conn == "" || r.Time.IsZero() || w.plan.sites[r.Host] == nil {
			t.Fatalf("request recorded as %+v", r)
		}
		conns[r.Conn] = true
	}
	if len(conns) >= len(reqs) {
		t.Errorf("%d connections for %d requests: keep-alive not seen", len(conns), len(reqs))
	}
}

func checkSite(t *testing.T, client *http.Client, scheme string, s *site, lat time.Duration) bool {
	h := s.host
	start := time.Now()
	req, _ := http.NewRequest("GET", scheme+"://"+h+"/robots.txt", nil)
	req.Header.Set("User-Agent", "github.com/spyder-crawler/spyder/test")
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("%s robots.txt: %v", h, err)
		return false
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if d := time.Since(start); d < lat {
		t.Errorf("%s: answered in %v, before the %v latency", h, d, lat)
	}
	v := robotsVariants[s.robots]
	if resp.StatusCode != v.status || string(body) != v.body {
		t.Errorf("%s robots.txt: %d %q, want %d %q", h, resp.StatusCode, body, v.status, v.body)
	}
	resp, err = client.Get(scheme + "://" + h + "/")
	if err != nil {
		t.Errorf("%s /: %v", h, err)
		return false
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	rt := s.route("/")
	if resp.StatusCode != rt.status || resp.Header.Get("Content-Type") != rt.ctype || resp.Header.Get("Location") != rt.location {
		t.Errorf("%s /: %d %q %q, want %+v", h, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Location"), rt)
	}
	if rt.html && string(body) != s.pageBody() {
		t.Errorf("%s /: body is not the page", h)
	}
	return true
}

func BenchmarkStart(b *testing.B) {
	for _, n := range []int{2000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				Start(b, Options{Hosts: n, Seed: 1, SlowFraction: 0.03})
			}
		})
	}
}

func BenchmarkWarm(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		w := Start(b, Options{Hosts: 10000, Seed: 1, SlowFraction: 0.03})
		b.StartTimer()
		if err := w.Warm(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDNSTruncatesToTCP checks that the 1,000-record answer is truncated
// over UDP (512 bytes without EDNS) and whole over TCP.
func TestDNSTruncatesToTCP(t *testing.T) {
	w := Start(t, Options{Hosts: 10, Seed: 1, Hostile: true})
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(hostDNS1000), dns.TypeAAAA)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, w.Resolver)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || len(r.Answer) >= dnsRecords {
		t.Errorf("UDP answer: truncated=%v with %d records, want truncated", r.Truncated, len(r.Answer))
	}
	r, _, err = (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(m, w.Resolver)
	if err != nil {
		t.Fatal(err)
	}
	if r.Truncated || len(r.Answer) != dnsRecords {
		t.Errorf("TCP answer: truncated=%v with %d records, want %d", r.Truncated, len(r.Answer), dnsRecords)
	}
}

// TestDNSLameAlias checks that the alias whose target cannot be reached
// answers SERVFAIL to every question but CNAME, which names the target.
func TestDNSLameAlias(t *testing.T) {
	w := Start(t, Options{Hosts: 10, Seed: 1, Hostile: true})
	c := &dns.Client{Timeout: 2 * time.Second}
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeNS, dns.TypeMX, dns.TypeTXT} {
		if r := query(t, c, w.Resolver, hostLameAlias, qt); r.Rcode != dns.RcodeServerFailure || len(r.Answer) != 0 {
			t.Errorf("%s: answered %s %v, want SERVFAIL and no records", dns.TypeToString[qt], dns.RcodeToString[r.Rcode], r.Answer)
		}
	}
	r := query(t, c, w.Resolver, hostLameAlias, dns.TypeCNAME)
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 || normName(r.Answer[0].(*dns.CNAME).Target) != "www.lame-zone.net" {
		t.Errorf("CNAME: answered %s %v, want www.lame-zone.net", dns.RcodeToString[r.Rcode], r.Answer)
	}
}

// TestDNSModes checks each mode of a DNS server, on a second server
// started on ::1 when the machine has IPv6 loopback: the world's own
// keeps answering from the plan whatever the other does.
func TestDNSModes(t *testing.T) {
	w := Start(t, Options{Hosts: 20, Seed: 3})
	ip := "::1"
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		ip = "127.0.0.1"
	} else {
		ln.Close()
	}
	s := w.StartResolver(t, ip)
	h := w.Seeds[0]
	udp := &dns.Client{Net: "udp", Timeout: 300 * time.Millisecond}
	tcp := &dns.Client{Net: "tcp", Timeout: 300 * time.Millisecond}
	ask := func(c *dns.Client, server string) (*dns.Msg, error) {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(h), dns.TypeNS)
		r, _, err := c.Exchange(m, server)
		return r, err
	}
	want := query(t, udp, w.Resolver, h, dns.TypeNS)
	for _, tt := range []struct {
		mode  DNSMode
		rcode int
	}{{DNSAnswer, want.Rcode}, {DNSServFail, dns.RcodeServerFailure}, {DNSRefused, dns.RcodeRefused}} {
		s.SetMode(tt.mode)
		r, err := ask(udp, s.Addr)
		if err != nil || r.Rcode != tt.rcode || tt.mode == DNSAnswer && len(r.Answer) != len(want.Answer) {
			t.Errorf("mode %d: answer %v, %v; want rcode %s", tt.mode, r, err, dns.RcodeToString[tt.rcode])
		}
	}
	s.SetMode(DNSTruncate)
	if r, err := ask(udp, s.Addr); err != nil || !r.Truncated || len(r.Answer) != 0 {
		t.Errorf("truncating, over UDP: %v, %v; want TC and no records", r, err)
	}
	if r, err := ask(tcp, s.Addr); err != nil || r.Truncated || len(r.Answer) != len(want.Answer) {
		t.Errorf("truncating, over TCP: %v, %v; want the whole answer", r, err)
	}
	s.SetMode(DNSSilent)
	if r, err := ask(udp, s.Addr); err == nil {
		t.Errorf("silent: answered %v", r)
	}
	if r := query(t, udp, w.Resolver, h, dns.TypeNS); len(r.Answer) != len(want.Answer) {
		t.Errorf("the world's own server answered %v while another was silent", r)
	}
	if u, tc := s.Queries(); u != 5 || tc != 1 {
		t.Errorf("Queries() = %d UDP, %d TCP; want 5 and 1", u, tc)
	}
}

// Expected holds a REDIRECTS_TO edge for each cross-domain hop, including
// hops whose source is not a seed (a ping-pong pair's return hop), and
// none within one registrable domain.
func TestExpectedRedirects(t *testing.T) {
	w := Start(t, Options{Hosts: 2000, Seed: 1})
	seeds := make(map[string]bool)
	for _, s := range w.Seeds {
		seeds[s] = true
	}
	var n, fromNonSeed int
	for _, e := range w.Expected {
		if e.Type != spyder.RedirectsTo {
			continue
		}
		n++
		if !seeds[e.Source] {
			fromNonSeed++
		}
		if apexOf(e.Source) == apexOf(e.Target) {
			t.Errorf("redirect edge within one domain: %+v", e)
		}
	}
	if n == 0 || fromNonSeed == 0 {
		t.Fatalf("%d REDIRECTS_TO edges, %d from a host that is not a seed; want some of each", n, fromNonSeed)
	}
}
