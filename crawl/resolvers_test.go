package crawl_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/internal/clocktest"
	"github.com/spyder-crawler/spyder/resolver"
)

// resolverWorld is a small world with n DNS servers: the world's own and
// n-1 more on loopback (the last on ::1 when v6 is set).
func resolverWorld(t *testing.T, n int, v6 bool) (*crawltest.World, []*crawltest.DNSServer) {
	t.Helper()
	w := crawltest.Start(t, crawltest.Options{Hosts: 60, Seed: 21})
	servers := []*crawltest.DNSServer{w.DNS}
	for i := 1; i < n; i++ {
		ip := "127.0.0.1"
		if v6 && i == n-1 {
			ip = "::1"
		}
		servers = append(servers, w.StartResolver(t, ip))
	}
	return w, servers
}

// mustResolverCrawler crawls w through servers (their addresses joined
// with commas), with short DNS timeouts and clk as the clock. Every seed's
// top-level domain is excluded, so a probe is its one lookup and nothing
// else: the rotation over the resolvers is exact.
func mustResolverCrawler(t *testing.T, w *crawltest.World, servers []*crawltest.DNSServer, clk *clocktest.Clock, retries int) *crawl.Crawler {
	t.Helper()
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, s.Addr)
	}
	var tlds []string
	for _, h := range w.Seeds {
		tlds = append(tlds, h[strings.LastIndexByte(h, '.')+1:])
	}
	c, err := crawl.New(crawl.Config{
		Resolver: strings.Join(addrs, ","), Dial: w.Dial, RootCAs: w.RootCAs, ExcludeTLDs: tlds,
		DNSTimeout: 150 * time.Millisecond, DNSRetries: retries, HostTimeout: 5 * time.Second, Now: clk.Now,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// addressed returns n seeds of w that resolve to at least one address.
func addressed(t *testing.T, w *crawltest.World, n int) []string {
	t.Helper()
	var out []string
	for _, h := range w.Seeds {
		edges, _ := w.ExpectedFor([]string{h})
		if slices.ContainsFunc(edges, func(e spyder.Edge) bool { return e.Type == spyder.ResolvesTo }) {
			out = append(out, h)
		}
		if len(out) == n {
			return out
		}
	}
	t.Fatalf("world has %d seeds with an address, want %d", len(out), n)
	return nil
}

// checkDNSEdges compares the RESOLVES_TO edges of r with the world's.
func checkDNSEdges(t *testing.T, w *crawltest.World, r *spyder.Result) {
	t.Helper()
	pick := func(es []spyder.Edge) []edge {
		var out []edge
		for _, e := range es {
			if e.Type == spyder.ResolvesTo {
				out = append(out, edge{e.Type, e.Source, e.Target})
			}
		}
		slices.SortFunc(out, func(a, b edge) int { return strings.Compare(a.Target, b.Target) })
		return out
	}
	want, _ := w.ExpectedFor([]string{string(r.Host)})
	if diff := cmp.Diff(pick(want), pick(r.Edges)); diff != "" {
		t.Errorf("%s: RESOLVES_TO (-want +got):\n%s", r.Host, diff)
	}
}

func dnsStep(r *spyder.Result) spyder.StepOutcome {
	for _, s := range r.Outcome.Steps {
		if s.Step == spyder.StepDNS {
			return s
		}
	}
	return spyder.StepOutcome{}
}

// TestCrawler_Resolvers_Spread checks that lookups take turns over every
// resolver, IPv4 and IPv6 alike, and that a lookup every resolver answers
// at once leaves the counts out of the outcome.
func TestCrawler_Resolvers_Spread(t *testing.T) {
	w, servers := resolverWorld(t, 3, true)
	clk := clocktest.New(time.Unix(1700000000, 0))
	c := mustResolverCrawler(t, w, servers, clk, 0)
	hosts := addressed(t, w, 12)
	for _, h := range hosts {
		r := c.Visit(t.Context(), host.Name(h))
		checkDNSEdges(t, w, r)
		if s := dnsStep(r); s.Status != spyder.StatusOK || s.Resolvers != nil {
			t.Errorf("%s: dns step %+v, want ok without resolver counts", h, s)
		}
	}
	var total uint64
	for i, st := range c.Resolver().Stats() {
		if st.Server != servers[i].Addr || !st.Up || st.Timeouts+st.ServFail+st.Refused+st.Truncated+st.Errors != 0 {
			t.Errorf("ResolverStats()[%d] = %+v, want %s up and only answers", i, st, servers[i].Addr)
		}
		// Each of 12 lookups of 5 queries (A, AAAA, NS, MX, TXT) starts
		// at the next resolver.
		if udp, _ := servers[i].Queries(); udp != 20 || st.Answers != 20 {
			t.Errorf("resolver %s got %d UDP queries and counted %d answers, want 20 (4 lookups)", st.Server, udp, st.Answers)
		}
		total += st.Answers
	}
	if total != 12*5 {
		t.Errorf("answers counted %d, want %d", total, 12*5)
	}
}

// TestCrawler_Resolvers_Failover checks that a SERVFAIL, REFUSED or
// unanswered query is asked of the next resolver, that the dns step counts
// what each resolver did, and that a single resolver's SERVFAIL stands.
func TestCrawler_Resolvers_Failover(t *testing.T) {
	tests := []struct {
		mode crawltest.DNSMode
		want spyder.ResolverCounts
	}{
		{crawltest.DNSServFail, spyder.ResolverCounts{ServFail: 5}},
		{crawltest.DNSRefused, spyder.ResolverCounts{Refused: 5}},
		{crawltest.DNSSilent, spyder.ResolverCounts{Timeouts: 5}},
	}
	for _, tt := range tests {
		w, servers := resolverWorld(t, 2, false)
		servers[0].SetMode(tt.mode)
		c := mustResolverCrawler(t, w, servers, clocktest.New(time.Unix(1700000000, 0)), 1)
		h := addressed(t, w, 1)[0]
		r := c.Visit(t.Context(), host.Name(h)) // starts at the first resolver
		checkDNSEdges(t, w, r)
		first := tt.want
		first.Server = servers[0].Addr
		want := []spyder.ResolverCounts{first, {Server: servers[1].Addr, Answers: 5}}
		if s := dnsStep(r); s.Status != spyder.StatusOK || !cmp.Equal(s.Resolvers, want) {
			t.Errorf("mode %d: dns step %+v, want ok with %+v", tt.mode, s, want)
		}
	}

	// One resolver answering SERVFAIL: nobody else to ask, so it stands.
	// With every answer a failure, the CNAME is asked for on its own
	// after the five queries: six in all, none asked twice.
	w, servers := resolverWorld(t, 1, false)
	servers[0].SetMode(crawltest.DNSServFail)
	c := mustResolverCrawler(t, w, servers, clocktest.New(time.Unix(1700000000, 0)), 2)
	r := c.Visit(t.Context(), host.Name(addressed(t, w, 1)[0]))
	want := []spyder.ResolverCounts{{Server: servers[0].Addr, ServFail: 6}}
	if s := dnsStep(r); s.Status != "servfail" || !cmp.Equal(s.Resolvers, want) {
		t.Errorf("single resolver answering SERVFAIL: dns step %+v, want servfail with %+v", s, want)
	}
	if udp, _ := servers[0].Queries(); udp != 6 {
		t.Errorf("single resolver answering SERVFAIL got %d queries, want 6 (five, then CNAME; none asked again)", udp)
	}
}

// TestCrawler_Resolvers_Truncated checks that an answer truncated over UDP
// is asked again over TCP of the same resolver.
func TestCrawler_Resolvers_Truncated(t *testing.T) {
	w, servers := resolverWorld(t, 1, false)
	servers[0].SetMode(crawltest.DNSTruncate)
	c := mustResolverCrawler(t, w, servers, clocktest.New(time.Unix(1700000000, 0)), 0)
	h := addressed(t, w, 1)[0]
	r := c.Visit(t.Context(), host.Name(h))
	checkDNSEdges(t, w, r)
	want := []spyder.ResolverCounts{{Server: servers[0].Addr, Answers: 5, Truncated: 5}}
	if s := dnsStep(r); s.Status != spyder.StatusOK || !cmp.Equal(s.Resolvers, want) {
		t.Errorf("dns step %+v, want ok with %+v", s, want)
	}
	if udp, tcp := servers[0].Queries(); udp < 5 || tcp < 5 {
		t.Errorf("resolver got %d UDP and %d TCP queries, want 5 of each for the host", udp, tcp)
	}
	if st := c.Resolver().Stats()[0]; st.Truncated < 5 || st.Answers < 5 {
		t.Errorf("ResolverStats = %+v, want 5 truncated and 5 answers at least", st)
	}
}

// TestCrawler_Resolvers_SetAside checks that a resolver that stops
// answering is set aside after three missed attempts, is not asked while
// it is, and after ResolverCooldown is tried by one lookup: set aside again
// while still silent, back in rotation once it answers.
func TestCrawler_Resolvers_SetAside(t *testing.T) {
	w, servers := resolverWorld(t, 2, false)
	servers[0].SetMode(crawltest.DNSSilent)
	clk := clocktest.New(time.Unix(1700000000, 0))
	c := mustResolverCrawler(t, w, servers, clk, 1)
	hosts := addressed(t, w, 8)
	probe := func(h string) {
		t.Helper()
		r := c.Visit(t.Context(), host.Name(h))
		checkDNSEdges(t, w, r)
		if s := dnsStep(r); s.Status != spyder.StatusOK {
			t.Errorf("%s: dns step %+v, want ok through the other resolver", h, s)
		}
	}
	silentQueries := func() int64 { udp, _ := servers[0].Queries(); return udp }
	// Lookups start at the silent resolver every other time: after six
	// lookups it has missed three attempts.
	for _, h := range hosts[:6] {
		probe(h)
	}
	if st := c.Resolver().Stats()[0]; st.Up || st.SetAside != 1 || st.Timeouts != 15 {
		t.Fatalf("after 3 missed attempts: %+v, want set aside once with 15 timeouts", st)
	}
	before := silentQueries()
	for _, h := range hosts[:4] {
		probe(h)
	}
	if n := silentQueries(); n != before {
		t.Errorf("resolver set aside was asked %d queries, want none", n-before)
	}

	// Cooldown over, still silent: one lookup tries it and it is set
	// aside again at once.
	clk.Add(resolver.Cooldown + time.Second)
	probe(hosts[0])
	probe(hosts[1])
	if n := silentQueries() - before; n != 5 {
		t.Errorf("after the cooldown the silent resolver got %d queries, want 5 (one trial lookup)", n)
	}
	if st := c.Resolver().Stats()[0]; st.Up || st.SetAside != 2 {
		t.Errorf("after a failed trial: %+v, want set aside twice", st)
	}

	// It answers again: after the next cooldown a trial brings it back.
	servers[0].SetMode(crawltest.DNSAnswer)
	clk.Add(resolver.Cooldown + time.Second)
	probe(hosts[2])
	if st := c.Resolver().Stats()[0]; !st.Up || st.Answers == 0 {
		t.Fatalf("after a trial it answered: %+v, want up with answers", st)
	}
	before = silentQueries()
	for _, h := range hosts[:4] {
		probe(h)
	}
	if n := silentQueries() - before; n != 10 {
		t.Errorf("resolver back in rotation got %d queries in 4 lookups, want 10 (every other lookup)", n)
	}
}

// TestCrawler_Probe_IPv6Only checks that a host with only an AAAA record is
// probed over IPv6: the TLS handshake and both requests go to its IPv6
// address, here ::1, from the resolver on ::1.
func TestCrawler_Probe_IPv6Only(t *testing.T) {
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	f := mustFixture(t, []string{"v6only.example.com. 60 IN AAAA ::1"}, []string{"v6only.example.com"}, fixtureHandler())
	v6 := mustIPv6TLS(t, f)
	var mu sync.Mutex
	var dialed []string
	c := mustCrawler(t, f, func(cfg *crawl.Config) {
		cfg.AllowPrivate = true
		cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, network+" "+addr)
			mu.Unlock()
			if addr != "[::1]:443" {
				return nil, errRefused
			}
			// Port 443 is the probe's; the server listens on another
			// port of the same IPv6 address.
			var d net.Dialer
			return d.DialContext(ctx, "tcp6", v6.addr)
		}
	})
	r := c.Visit(t.Context(), "v6only.example.com")
	want := map[string]string{"dns": "ok", "tls": "ok", "robots": "ok", "page": "ok"}
	if diff := cmp.Diff(want, statuses(r)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if !slices.Contains(edgesOf(r), edge{spyder.ResolvesTo, "v6only.example.com", "::1"}) {
		t.Errorf("edges %v, want RESOLVES_TO ::1", edgesOf(r))
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(dialed, []string{"tcp [::1]:443"}) {
		t.Errorf("dialed %v, want only tcp [::1]:443", dialed)
	}
	if got := v6.seen(); !slices.Equal(got, []string{"::1 v6only.example.com /robots.txt", "::1 v6only.example.com /"}) {
		t.Errorf("IPv6 server saw %v, want robots.txt and / from ::1", got)
	}
}

// ipv6TLS is an HTTPS server on [::1] that records, per request, the
// client's address, the host and the path.
type ipv6TLS struct {
	addr string
	mu   sync.Mutex
	reqs []string
}

func (s *ipv6TLS) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// mustIPv6TLS serves fixtureHandler on [::1] with f's certificate.
func mustIPv6TLS(tb testing.TB, f *fixture) *ipv6TLS {
	tb.Helper()
	s := &ipv6TLS{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		s.mu.Lock()
		s.reqs = append(s.reqs, ip+" "+r.Host+" "+r.URL.Path)
		s.mu.Unlock()
		fixtureHandler().ServeHTTP(w, r)
	}))
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv.Listener.Close()
	srv.Listener = ln
	srv.TLS = &tls.Config{Certificates: f.https.TLS.Certificates}
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	s.addr = ln.Addr().String()
	return s
}
