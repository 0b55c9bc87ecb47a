package crawltest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// servers are the loopback listeners world addresses map to.
type servers struct {
	tls, plain, hang, trickle string // loopback addresses

	mu    sync.Mutex
	conns map[net.Conn]bool // open black-hole connections
}

// track registers c as an open connection, so that stopping the world
// closes it even while a handler is blocked on it.
func (s *servers) track(c net.Conn) {
	s.mu.Lock()
	s.conns[c] = true
	s.mu.Unlock()
}

// forget closes c and drops it from the open connections.
func (s *servers) forget(c net.Conn) {
	c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// startHTTP starts the HTTPS server (virtual hosting by SNI and Host), the
// plain HTTP server and the black hole that hanging hosts map to.
func (w *World) startHTTP() (stop func(), err error) {
	lns, err := listenLoopback(4)
	if err != nil {
		return nil, err
	}
	tlsLn, plainLn, hangLn, trickleLn := lns[0], lns[1], lns[2], lns[3]
	w.srv = &servers{tls: tlsLn.Addr().String(), plain: plainLn.Addr().String(), hang: hangLn.Addr().String(),
		trickle: trickleLn.Addr().String(), conns: make(map[net.Conn]bool)}

	// The world's servers prefer classical key exchange and send no session
	// tickets, as many real servers do: the hybrid post-quantum exchange
	// would double the world's share of the CPU in crawl benchmarks.
	cfg := &tls.Config{
		GetCertificate:         w.certificate,
		NextProtos:             []string{"http/1.1"},
		CurvePreferences:       []tls.CurveID{tls.X25519, tls.CurveP256},
		SessionTicketsDisabled: true,
	}
	quiet := log.New(io.Discard, "", 0)
	if os.Getenv("CRAWLTEST_DEBUG") != "" {
		quiet = log.New(os.Stderr, "crawltest: ", 0)
	}
	https := &http.Server{Handler: http.HandlerFunc(w.serveHTTP), ErrorLog: quiet, ReadHeaderTimeout: 30 * time.Second}
	plain := &http.Server{Handler: http.HandlerFunc(w.serveHTTP), ErrorLog: quiet, ReadHeaderTimeout: 30 * time.Second}
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); w.trickle(trickleLn) }()
	go func() { defer wg.Done(); https.Serve(tls.NewListener(tlsLn, cfg)) }()
	go func() { defer wg.Done(); plain.Serve(plainLn) }()
	go func() { defer wg.Done(); w.blackHole(hangLn) }()
	return func() {
		https.Close()
		plain.Close()
		hangLn.Close()
		trickleLn.Close()
		w.srv.mu.Lock()
		for c := range w.srv.conns {
			c.Close()
		}
		w.srv.mu.Unlock()
		wg.Wait()
	}, nil
}

// listenLoopback opens n TCP listeners on free loopback ports. If one
// fails, those already open are closed, so nothing is left listening.
func listenLoopback(n int) ([]net.Listener, error) {
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("listen: %w", err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// acceptEach accepts connections on ln until it is closed and serves each
// with serve in its own goroutine, counted as an active handler. A
// connection is tracked while it is served, so stopping the world closes
// it, and is closed and forgotten once serve returns; one accepted after
// the world began closing is closed at once.
func (w *World) acceptEach(ln net.Listener, serve func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !w.enter() {
			c.Close()
			continue
		}
		w.srv.track(c)
		go func() {
			defer w.leave()
			defer w.srv.forget(c)
			serve(c)
		}()
	}
}

// blackHole accepts connections and never answers, reading until the
// client closes or the world stops.
func (w *World) blackHole(ln net.Listener) {
	w.acceptEach(ln, func(c net.Conn) { io.Copy(io.Discard, c) })
}

// certificate picks the certificate by SNI; a host without one (or an
// unknown name) fails the handshake.
func (w *World) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	s := w.plan.sites[normName(hello.ServerName)]
	if s == nil || s.tlsFail || s.spec == nil {
		return nil, fmt.Errorf("crawltest: no certificate for %q", hello.ServerName)
	}
	return s.spec.certificate(w.plan.ca)
}

// dial maps world addresses to the loopback servers; see World.Dial.
func (w *World) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	target, known := "", false
	switch network {
	case "tcp", "tcp4", "tcp6":
		target, known = w.route(addr)
	}
	if !known {
		w.mu.Lock()
		w.refused = append(w.refused, addr)
		w.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("%w: %s", ErrUnreachable, addr)}
	}
	if !w.sleep(ctx, w.opts.HTTPLatency) {
		if err := ctx.Err(); err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("crawltest: world stopped")}
	}
	if target == "" {
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", target)
}

// route returns the loopback server a connection to the world address
// addr ("ip:port") reaches, "" for an address that refuses connections;
// known is false for an address outside the world (private, unknown, or a
// port other than 443 and 80).
func (w *World) route(addr string) (target string, known bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "", false
	}
	role := w.plan.ips[ip.Unmap()]
	if role == 0 || (port != "443" && port != "80") {
		return "", false
	}
	switch {
	case role == ipDown:
		return "", true
	case role == ipHang:
		return w.srv.hang, true
	case role == ipTrickle:
		return w.srv.trickle, true
	case port == "443":
		return w.srv.tls, true
	}
	return w.srv.plain, true
}

// Routes maps every world address Dial connects ("ip:port", the world's
// IP addresses on ports 443 and 80) to the loopback server it connects it
// to after HTTPLatency, or to "" for an address whose connections are
// refused after HTTPLatency. Dial refuses every other address at once. It
// is for a world in another process, whose client dials the servers
// itself.
func (w *World) Routes() map[string]string {
	m := make(map[string]string, 2*len(w.plan.ips))
	for ip := range w.plan.ips {
		for _, port := range []string{"443", "80"} {
			addr := net.JoinHostPort(ip.String(), port)
			if target, known := w.route(addr); known {
				m[addr] = target
			}
		}
	}
	return m
}

// serveHTTP answers as the site named by the Host header.
func (w *World) serveHTTP(rw http.ResponseWriter, r *http.Request) {
	if !w.enter() {
		return
	}
	defer w.leave()
	host := normName(r.Host)
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		host = normName(h)
	}
	w.record(Request{Host: host, Path: r.URL.Path, UserAgent: r.UserAgent(), Time: time.Now(),
		Conn: r.RemoteAddr, TLS: r.TLS != nil})
	ctx := r.Context()
	if !w.sleep(ctx, w.opts.HTTPLatency) {
		return
	}
	s := w.plan.sites[host]
	if s == nil {
		http.Error(rw, "misdirected request", http.StatusMisdirectedRequest)
		return
	}
	if r.URL.Path == "/robots.txt" {
		w.serveRobots(rw, r, s)
		return
	}
	if s.page > pageKinds && w.serveHostile(rw, r, s) {
		return
	}
	rt := s.route(r.URL.Path)
	rw.Header().Set("Content-Type", rt.ctype)
	if rt.location != "" {
		rw.Header().Set("Location", rt.location)
	}
	var body []byte
	if rt.html {
		body = []byte(s.pageBody())
	} else {
		body = s.otherBody(rt)
	}
	rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(rt.status)
	if !s.slow || r.URL.Path != "/" {
		rw.Write(body)
		return
	}
	// A slow page: ten chunks 50 ms apart.
	chunk := (len(body) + 9) / 10
	for len(body) > 0 {
		n := min(chunk, len(body))
		if _, err := rw.Write(body[:n]); err != nil {
			return
		}
		rw.(http.Flusher).Flush()
		body = body[n:]
		if len(body) > 0 && !w.sleep(ctx, 50*time.Millisecond) {
			return
		}
	}
}

// serveRobots answers /robots.txt with s's variant, or for a trickling
// site with a body that never ends.
func (w *World) serveRobots(rw http.ResponseWriter, r *http.Request, s *site) {
	v := robotsVariants[s.robots]
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !s.trickle {
		rw.Header().Set("Content-Length", strconv.Itoa(len(v.body)))
		rw.WriteHeader(v.status)
		io.WriteString(rw, v.body)
		return
	}
	// Trickle forever: a byte every 200 ms until the client goes away.
	rw.WriteHeader(http.StatusOK)
	io.WriteString(rw, "User-agent: *\n")
	for {
		rw.(http.Flusher).Flush()
		if !w.sleep(r.Context(), 200*time.Millisecond) {
			return
		}
		if _, err := io.WriteString(rw, "#"); err != nil {
			return
		}
	}
}
