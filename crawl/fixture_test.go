package crawl_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// fixture is a tiny internet on loopback for the probe's unit tests: an
// authoritative DNS server answering from a record list, and one HTTPS
// server that every public address maps to, with a certificate from a test
// CA for the names given. Integration tests use crawl/crawltest instead.
type fixture struct {
	resolver string
	roots    *x509.CertPool
	https    *httptest.Server

	mu       sync.Mutex
	dialed   []string // addresses the crawler asked to dial
	requests []string // "host path" of every request served
	conns    int      // TLS connections accepted
	drops    int      // DNS queries for flaky.* seen
	dropped  map[uint16]bool
}

// mustFixture starts the DNS server with records (zone-file lines) and the
// HTTPS server with handler, its certificate valid for certNames.
func mustFixture(tb testing.TB, records []string, certNames []string, handler http.Handler) *fixture {
	tb.Helper()
	f := &fixture{}

	byName := make(map[string][]dns.RR)
	for _, s := range records {
		rr, err := dns.NewRR(s)
		if err != nil {
			tb.Fatalf("record %q: %v", s, err)
		}
		name := strings.ToLower(rr.Header().Name)
		byName[name] = append(byName[name], rr)
	}
	mux := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		q := r.Question[0]
		name := strings.ToLower(q.Name)
		rrs, ok := byName[name]
		if !ok {
			m.Rcode = dns.RcodeNameError
		}
		for hops := 0; hops < 8; hops++ {
			var next string
			for _, rr := range rrs {
				if rr.Header().Rrtype == q.Qtype {
					m.Answer = append(m.Answer, rr)
				} else if c, ok := rr.(*dns.CNAME); ok {
					m.Answer = append(m.Answer, rr)
					next = strings.ToLower(c.Target)
				}
			}
			if next == "" || q.Qtype == dns.TypeCNAME {
				break
			}
			rrs = byName[next]
		}
		if strings.HasPrefix(name, "flaky.") {
			// Drop the first query of each type: only a retry is answered.
			f.mu.Lock()
			f.drops++
			first := !f.dropped[q.Qtype]
			if f.dropped == nil {
				f.dropped = make(map[uint16]bool)
			}
			f.dropped[q.Qtype] = true
			f.mu.Unlock()
			if first {
				return
			}
		}
		if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
			size := dns.MinMsgSize
			if o := r.IsEdns0(); o != nil {
				size = int(o.UDPSize())
			}
			m.Truncate(size)
		}
		w.WriteMsg(m)
	})
	// UDP and TCP on the same port: retry when the TCP port is taken.
	var pc net.PacketConn
	var ln net.Listener
	for attempt := 0; ln == nil; attempt++ {
		var err error
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			tb.Fatal(err)
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err != nil {
			pc.Close()
			if attempt == 20 {
				tb.Fatal(err)
			}
		}
	}
	srv := &dns.Server{PacketConn: pc, Handler: mux}
	go srv.ActivateAndServe()
	tb.Cleanup(func() { srv.Shutdown() })
	f.resolver = pc.LocalAddr().String()
	tcp := &dns.Server{Listener: ln, Handler: mux}
	go tcp.ActivateAndServe()
	tb.Cleanup(func() { tcp.Shutdown() })

	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fixture CA"},
		NotBefore: time.Unix(1600000000, 0), NotAfter: time.Unix(1900000000, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	f.roots = x509.NewCertPool()
	f.roots.AddCert(ca)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: certNames[0]}, DNSNames: certNames,
		NotBefore: time.Unix(1600000000, 0), NotAfter: time.Unix(1900000000, 0),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}

	f.https = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.Host+" "+r.URL.RequestURI())
		f.mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	f.https.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}}
	f.https.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.mu.Lock()
			f.conns++
			f.mu.Unlock()
		}
	}
	f.https.StartTLS()
	tb.Cleanup(f.https.Close)
	return f
}

// dial maps every address on port 443 to the HTTPS server and records it.
func (f *fixture) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	f.mu.Lock()
	f.dialed = append(f.dialed, addr)
	f.mu.Unlock()
	_, port, _ := net.SplitHostPort(addr)
	if port != "443" {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errRefused}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, f.https.Listener.Addr().String())
}

var errRefused = &net.DNSError{Err: "connection refused (fixture)"}

func (f *fixture) snapshot() (dialed, requests []string, conns int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.dialed...), append([]string(nil), f.requests...), f.conns
}
