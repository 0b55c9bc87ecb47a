package crawl

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tlsServer serves TLS on a loopback port with cfg (a test certificate
// added), running serve on each connection once its handshake is done,
// and counts the connections it accepted.
type tlsServer struct {
	ln    net.Listener
	conns atomic.Int32
}

func startTLSServer(t *testing.T, cfg *tls.Config, serve func(*tls.Conn)) *tlsServer {
	t.Helper()
	now := time.Now()
	cert, key := testCert(t, "server", []string{"tls.example"}, now.Add(-time.Hour), now.Add(time.Hour), nil, nil)
	cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &tlsServer{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go func() {
				defer c.Close()
				tc := tls.Server(c, cfg)
				tc.SetDeadline(time.Now().Add(5 * time.Second))
				if tc.Handshake() == nil {
					serve(tc)
				}
			}()
		}
	}()
	return s
}

// dial connects to s, closing the connection at the test's end.
func (s *tlsServer) dial(ctx context.Context, t *testing.T) net.Conn {
	t.Helper()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// writeCounter counts the writes made on a connection.
type writeCounter struct {
	net.Conn
	writes int
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.writes++
	return w.Conn.Write(b)
}

// testProbe is a probe whose crawler dials with a plain net.Dialer.
func testProbe() *visit {
	var d net.Dialer
	return &visit{c: &Crawler{cfg: Config{Dial: d.DialContext}}, host: "tls.example"}
}

// TestSecure_KeyExchange: a server that takes P-256 gets a P-256 key
// share and one connection; one configured for X25519 alone refuses it
// and is asked again, on a second connection, with X25519.
func TestSecure_KeyExchange(t *testing.T) {
	for _, tt := range []struct {
		name   string
		server []tls.CurveID
		want   tls.CurveID
		conns  int32
	}{
		{"default server", nil, tls.CurveP256, 1},
		{"X25519 only", []tls.CurveID{tls.X25519}, tls.X25519, 2},
		{"P-384 only", []tls.CurveID{tls.CurveP384}, tls.CurveP384, 1},
		{"P-521 only", []tls.CurveID{tls.CurveP521}, tls.CurveP521, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startTLSServer(t, &tls.Config{CurvePreferences: tt.server}, func(*tls.Conn) {})
			ap := netip.MustParseAddrPort(srv.ln.Addr().String())
			p := testProbe()
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			var state *tls.ConnectionState
			tc, raw, err := p.secure(ctx, srv.dial(ctx, t), ap.Addr(), strconv.Itoa(int(ap.Port())), "tls.example",
				func(cs *tls.ConnectionState) { state = cs })
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if tc == nil || state.CurveID != tt.want {
				t.Errorf("curve %v, want %v", state.CurveID, tt.want)
			}
			if n := srv.conns.Load(); n != tt.conns {
				t.Errorf("%d connections, want %d", n, tt.conns)
			}
		})
	}
}

// TestFinishedConn_WithFirstRequest: after a TLS 1.3 handshake the
// client's Finished goes out in one write with the first request (two
// writes in all, the ClientHello and that one), and the server reads the
// request whole.
func TestFinishedConn_WithFirstRequest(t *testing.T) {
	const req = "GET / HTTP/1.1\r\n\r\n"
	got := make(chan string, 1)
	srv := startTLSServer(t, &tls.Config{}, func(tc *tls.Conn) {
		b := make([]byte, len(req))
		io.ReadFull(tc, b)
		got <- string(b)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	wc := &writeCounter{Conn: srv.dial(ctx, t)}
	tc, state, err := handshakeState(ctx, wc, "tls.example", curvesFirst)
	if err != nil {
		t.Fatal(err)
	}
	if state.Version != tls.VersionTLS13 {
		t.Fatalf("version %x, want TLS 1.3", state.Version)
	}
	if wc.writes != 1 {
		t.Errorf("%d writes after the handshake, want 1 (the ClientHello; Finished held)", wc.writes)
	}
	if _, err := io.WriteString(tc, req); err != nil {
		t.Fatal(err)
	}
	if wc.writes != 2 {
		t.Errorf("%d writes after the request, want 2", wc.writes)
	}
	select {
	case s := <-got:
		if s != req {
			t.Errorf("server read %q, want %q", s, req)
		}
	case <-ctx.Done():
		t.Fatal("server did not read the request")
	}
}

// TestFinishedConn_ReadFirst: a client that reads before it writes sends
// its held Finished first, so a server that speaks first (after its
// handshake ends) is heard, over TLS 1.3 and over TLS 1.2 (where the
// client reads the server's Finished after sending its own).
func TestFinishedConn_ReadFirst(t *testing.T) {
	for _, tt := range []struct {
		name    string
		version uint16
	}{{"TLS 1.3", tls.VersionTLS13}, {"TLS 1.2", tls.VersionTLS12}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startTLSServer(t, &tls.Config{MaxVersion: tt.version}, func(tc *tls.Conn) {
				io.WriteString(tc, "hello")
			})
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			tc, state, err := handshakeState(ctx, srv.dial(ctx, t), "tls.example", curvesFirst)
			if err != nil {
				t.Fatal(err)
			}
			if state.Version != tt.version {
				t.Fatalf("version %x, want %x", state.Version, tt.version)
			}
			tc.SetDeadline(time.Now().Add(3 * time.Second))
			b := make([]byte, 5)
			if _, err := io.ReadFull(tc, b); err != nil || string(b) != "hello" {
				t.Errorf("read %q, %v; want hello", b, err)
			}
		})
	}
}

// handshakeState is handshake, returning the state it hands onCert.
func handshakeState(ctx context.Context, nc net.Conn, host string, curves []tls.CurveID) (net.Conn, *tls.ConnectionState, error) {
	var state *tls.ConnectionState
	tc, err := handshake(ctx, nc, host, curves, func(cs *tls.ConnectionState) { state = cs })
	return tc, state, err
}

// TestSecure_FailureSaysWhy: a handshake that fails names why in its
// detail: a server sharing no group with the offer (X25519 alone, asked
// with the first try's groups), one speaking only TLS 1.1, one not
// speaking TLS at all, one failing on its side (Caddy, asked for a name
// it has no certificate for).
func TestSecure_FailureSaysWhy(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  *tls.Config
		want string
	}{
		{"no common group", &tls.Config{CurvePreferences: []tls.CurveID{tls.X25519}}, "no common key exchange group"},
		{"TLS 1.1 only", &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}, "no common protocol version"},
		{"no certificate for the name", &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return nil, errors.New("no certificate")
		}}, "server error: remote error: tls: internal error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startTLSServer(t, tt.cfg, func(*tls.Conn) {})
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, err := handshake(ctx, srv.dial(ctx, t), "tls.example", curvesFirst, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("handshake error = %v, want one saying %q", err, tt.want)
			}
		})
	}
	t.Run("not TLS", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
				c.Close()
			}
		}()
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, err = handshake(t.Context(), nc, "tls.example", curvesFirst, nil)
		if err == nil || !strings.Contains(err.Error(), "not TLS") {
			t.Errorf("handshake error = %v, want one saying %q", err, "not TLS")
		}
	})
}
