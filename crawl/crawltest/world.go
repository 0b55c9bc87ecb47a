package crawltest

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
)

// Options describe a world; the world is a pure function of them.
type Options struct {
	Hosts        int           // seed hosts to generate (plus shared NS/MX hosts etc.)
	Seed         int64         // generation seed
	DNSLatency   time.Duration // added to every DNS answer
	HTTPLatency  time.Duration // added before every HTTP response and on connect
	SlowFraction float64       // share of seed hosts that hang, trickle forever or answer slowly
	// Hostile adds the hosts of World.Hostile, inputs meant to exhaust a
	// crawler: a TLS server sending a byte a second, a body that never
	// ends, 1 GiB, 100,000 links, 50 redirects, 1,000 DNS records, 10,000
	// SANs, an invalid UTF-8 name, CNAME loops and long chains, a silent
	// DNS name, an alias whose target cannot be reached.
	Hostile bool
	// NoRequestLog keeps World.Requests empty (RequestCount still counts),
	// so that a long soak crawl does not see the world's memory grow.
	NoRequestLog bool
}

// Request is one HTTP request a world server saw.
type Request struct {
	Host      string // Host header, lowercased, port stripped
	Path      string
	UserAgent string
	Time      time.Time
	Conn      string // remote address: equal for requests over the same connection
	TLS       bool
}

// World is a running simulated internet. Its fields are set by [Start] and
// must not be changed.
type World struct {
	Resolver string // "127.0.0.1:port": authoritative DNS, UDP and TCP
	// DNS is the server at Resolver, whose mode a test may change;
	// [World.StartResolver] starts more.
	DNS     *DNSServer
	RootCAs *x509.CertPool    // the test CA
	CA      *x509.Certificate // the test CA, the one certificate RootCAs holds
	// Dial maps world addresses on :443 and :80 to the loopback servers. It
	// refuses every other address with an error and never dials out.
	Dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	Seeds []string // the hosts to crawl, in order
	// Expected is the exact set of edges (Type, Source, Target; other fields
	// empty) a correct non-continuous crawl of Seeds with default policy
	// must emit, sorted by Type, Source, Target.
	Expected []spyder.Edge
	// PageOutcome maps each seed to the status its page step must end
	// with. The contract pins "nxdomain", "excluded", "private_address",
	// "robots_blocked", "too_many_redirects", "not_html", "http_<code>",
	// "ok" (also for a page cut at the body cap) and "timeout" (a host
	// that hangs, or trickles robots.txt forever); the others are the
	// crawl package's names: "no_address" (no A/AAAA: CNAME loop, dangling
	// CNAME, MX-only name, or a redirect to a name that does not exist),
	// "connect_error" (every address refuses) and "tls_error" (the
	// handshake fails).
	PageOutcome map[string]string
	// Certs are the certificate nodes behind Expected's USES_CERT edges,
	// sorted by SPKI hash, as a crawler must record them (Verified for a
	// clock between 2021 and 2045).
	Certs []spyder.CertNode
	// Hostile are the hostile hosts of Options.Hostile, to probe besides
	// Seeds (one is not valid UTF-8, so it must be rejected as input).
	Hostile []string
	// HostileExpected is the exact set of edges their probes must emit:
	// DNS edges, the certificate when the handshake completes, the links
	// before the body cap (of the 1 GiB and 100,000-link pages).
	HostileExpected []spyder.Edge
	// HostileOutcome maps each hostile host to "step:status", the step
	// where its probe stops and how: e.g. "tls:timeout" for the server
	// that sends a byte a second, "page:too_many_redirects",
	// "dns:timeout" for the name the DNS server never answers,
	// "dns:invalid_host".
	HostileOutcome map[string]string
	// Requests returns every HTTP request the servers saw so far.
	Requests func() []Request
	// RequestCount returns how many HTTP requests the servers saw so far.
	RequestCount func() int
	// Refused returns every address Dial refused because it is not a world
	// server (private, unknown or a port other than 443/80), in call order.
	Refused func() []string
	// Blocked lists the hosts (seeds and redirect targets) whose robots.txt
	// disallows "/" for spyder or answers 5xx: their "/" must never be
	// requested.
	Blocked []string
	// CrawlDelay maps a host to the Crawl-delay its robots.txt asks of spyder.
	CrawlDelay map[string]time.Duration

	plan *plan
	opts Options
	srv  *servers

	mu       sync.Mutex
	closed   bool
	stops    []func()       // the servers, stopped last first at cleanup
	active   sync.WaitGroup // DNS and HTTP handlers, black-hole connections
	done     chan struct{}  // closed at cleanup: sleeping handlers return
	requests []Request
	nreq     int
	refused  []string
}

// ErrUnreachable is returned by [World.Dial] for an address that is not a
// world server: it was refused without any packet being sent.
var ErrUnreachable = errors.New("crawltest: address outside the world")

// Start generates the world for o, starts its servers on loopback and stops
// them at tb.Cleanup.
func Start(tb testing.TB, o Options) *World {
	tb.Helper()
	p, err := newPlan(o)
	if err != nil {
		tb.Fatalf("crawltest: %v", err)
	}
	w := &World{plan: p, opts: o, done: make(chan struct{})}
	w.Seeds = append([]string(nil), p.seeds...)
	w.RootCAs = x509.NewCertPool()
	w.RootCAs.AddCert(p.ca.cert)
	w.CA = p.ca.cert
	w.Expected, w.PageOutcome, w.Certs = p.expected()
	if o.Hostile {
		w.Hostile = append([]string(nil), p.hostile...)
		w.HostileExpected, w.HostileOutcome = p.expectedHostile()
	}
	w.Blocked = p.blockedHosts()
	w.CrawlDelay = p.crawlDelays()
	w.Requests = w.requestLog
	w.RequestCount = func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.nreq
	}
	w.Refused = w.refusedLog
	w.Dial = w.dial

	tb.Cleanup(func() {
		w.mu.Lock()
		w.closed = true
		stops := w.stops
		w.mu.Unlock()
		close(w.done)
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		w.active.Wait()
	})
	dnsSrv, stop, err := w.startDNS("127.0.0.1")
	if err != nil {
		tb.Fatalf("crawltest: dns: %v", err)
	}
	w.DNS, w.Resolver = dnsSrv, dnsSrv.Addr
	w.addStop(stop)
	stop, err = w.startHTTP()
	if err != nil {
		tb.Fatalf("crawltest: http: %v", err)
	}
	w.addStop(stop)
	return w
}

func (w *World) addStop(stop func()) {
	w.mu.Lock()
	w.stops = append(w.stops, stop)
	w.mu.Unlock()
}

// enter registers a handler goroutine; it reports false once the world is
// closing, so cleanup can wait for every handler without racing new ones.
func (w *World) enter() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.active.Add(1)
	return true
}

func (w *World) leave() { w.active.Done() }

// sleep waits d, or less if ctx ends or the world closes; it reports whether
// the full time passed.
func (w *World) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-w.done:
		return false
	}
}

func (w *World) record(r Request) {
	w.mu.Lock()
	w.nreq++
	if !w.opts.NoRequestLog {
		w.requests = append(w.requests, r)
	}
	w.mu.Unlock()
}

func (w *World) requestLog() []Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Request(nil), w.requests...)
}

func (w *World) refusedLog() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.refused...)
}

// ExpectedFor computes, as for Expected and PageOutcome, the edges and the
// page status of a correct probe of each of hosts (normalised names; the
// world answers NXDOMAIN for any it does not hold). A continuous crawl
// probes hosts beyond Seeds: pass it the hosts it probed.
func (w *World) ExpectedFor(hosts []string) ([]spyder.Edge, map[string]string) {
	edges, outcomes, _ := w.plan.expectedFor(hosts)
	return edges, outcomes
}

// Describe says what the plan made of host (its DNS and HTTP behaviour), for
// test failure messages; "" if the world has no such host.
func (w *World) Describe(host string) string { return w.plan.describe(host) }

func sortEdges(es []spyder.Edge) {
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		return a.Target < b.Target
	})
}

// Warm signs every certificate now, on all cores, instead of at each one's
// first handshake: a benchmark calls it before resetting its timer so that
// the world's one-time work is not counted as the crawler's.
func (w *World) Warm() error {
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	next := make(chan *certSpec)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				if _, err := c.certificate(w.plan.ca); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for _, c := range w.plan.certs {
		next <- c
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
