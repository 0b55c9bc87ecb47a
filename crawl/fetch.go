package crawl

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"spyder/queue"
)

// stepError is a failed network step and the status it is recorded with.
type stepError struct {
	status string
	err    error
}

func (e *stepError) Error() string { return e.status + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// classify turns an error of a network step into a status and a detail.
func classify(ctx context.Context, err error, fallback string) (string, string) {
	var se *stepError
	if errors.As(err, &se) {
		return se.status, se.err.Error()
	}
	if ctx.Err() != nil || isTimeout(err) {
		return StatusTimeout, err.Error()
	}
	return fallback, err.Error()
}

// httpConn is one HTTP/1.1 connection (TLS for https) to one host, used for
// one request after another while the server keeps it open.
type httpConn struct {
	scheme, host string
	ip           netip.Addr
	nc           net.Conn
	br           *bufio.Reader
	stop         func() bool
	usable       bool
}

func (hc *httpConn) close() {
	hc.stop()
	hc.nc.Close()
	hc.usable = false
}

// connect dials addrs in turn (the next one only when a connect fails) and,
// for https, completes a TLS handshake with SNI host without verifying the
// certificate: the caller verifies it, so that a bad certificate is recorded
// rather than lost.
func (p *probe) connect(ctx context.Context, scheme, host, port string, addrs []netip.Addr) (*httpConn, *tls.ConnectionState, error) {
	cctx, cancel := context.WithTimeout(ctx, p.c.cfg.ConnectTimeout)
	defer cancel()
	var nc net.Conn
	var ip netip.Addr
	var err error
	for _, a := range addrs {
		nc, err = p.c.cfg.Dial(cctx, "tcp", net.JoinHostPort(a.String(), port))
		if err == nil {
			ip = a
			break
		}
		if cctx.Err() != nil {
			break
		}
	}
	if nc == nil {
		if cctx.Err() != nil {
			return nil, nil, &stepError{StatusTimeout, fmt.Errorf("connect: %w", err)}
		}
		return nil, nil, &stepError{StatusConnectError, err}
	}
	var state *tls.ConnectionState
	if scheme == "https" {
		tc := tls.Client(nc, &tls.Config{
			ServerName:         host,
			InsecureSkipVerify: true, // verified by verifyCert, so bad certificates are recorded
			NextProtos:         []string{"http/1.1"},
			// Classic key exchange only: the post-quantum hybrid Go
			// offers by default costs a few times the CPU of the whole
			// X25519 exchange on both sides, for pages that are public.
			CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256},
		})
		if err := tc.HandshakeContext(cctx); err != nil {
			nc.Close()
			if cctx.Err() != nil || isTimeout(err) {
				return nil, nil, &stepError{StatusTimeout, fmt.Errorf("tls handshake: %w", err)}
			}
			return nil, nil, &stepError{StatusTLSError, err}
		}
		cs := tc.ConnectionState()
		state = &cs
		nc = tc
	}
	if d, ok := ctx.Deadline(); ok {
		nc.SetDeadline(d)
	}
	// Cancellation of ctx (not only its deadline) interrupts any I/O.
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	hc := &httpConn{scheme: scheme, host: host, ip: ip, nc: nc, br: bufio.NewReaderSize(nc, 4096), stop: stop, usable: true}
	return hc, state, nil
}

// recordCert records the leaf certificate of the host's first TLS
// connection, verified against RootCAs for the host's name.
func (p *probe) recordCert(cs *tls.ConnectionState) {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		p.set(StepTLS, StatusTLSError, "no certificate")
		return
	}
	leaf := cs.PeerCertificates[0]
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	spki := hex.EncodeToString(sum[:])
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, verr := leaf.Verify(x509.VerifyOptions{
		DNSName:       p.host,
		Roots:         p.c.cfg.RootCAs,
		Intermediates: inter,
		CurrentTime:   p.c.cfg.Now(),
	})
	sans := append([]string(nil), leaf.DNSNames...)
	for _, ip := range leaf.IPAddresses {
		sans = append(sans, ip.String())
	}
	p.certs = append(p.certs, CertNode{
		SPKISHA256: spki,
		SubjectCN:  leaf.Subject.CommonName,
		IssuerCN:   leaf.Issuer.CommonName,
		NotBefore:  leaf.NotBefore.Unix(),
		NotAfter:   leaf.NotAfter.Unix(),
		SANs:       sans,
		Verified:   verr == nil,
	})
	p.edge(UsesCert, spki)
	if verr != nil {
		p.set(StepTLS, StatusUnverified, verr.Error())
	} else {
		p.set(StepTLS, StatusOK, "")
	}
}

// errCrawlDelay reports that the gap a host's Crawl-delay asks for does not
// fit in what is left of the probe.
var errCrawlDelay = errors.New("crawl: crawl-delay exceeds the host deadline")

// do sends GET path on hc, after the host's Crawl-delay and the limiter
// allow it, and reads the response header. The caller must call done.
func (p *probe) do(ctx context.Context, hc *httpConn, path string) (*http.Response, error) {
	now := time.Now()
	if at := p.c.robots.reserve(hc.host, now); at.After(now) {
		if d, ok := ctx.Deadline(); ok && at.After(d) {
			return nil, &stepError{StatusTimeout, errCrawlDelay}
		}
		t := time.NewTimer(at.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &stepError{StatusTimeout, ctx.Err()}
		case <-t.C:
		}
	}
	if l := p.c.cfg.Limiter; l != nil {
		if err := l.Wait(ctx, p.c.cfg.LimitKey(hc.host, hc.ip)); err != nil {
			// A limiter may give up at once when the wait would outlast
			// ctx's deadline; that is a timeout too.
			if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
				return nil, &stepError{StatusTimeout, fmt.Errorf("limiter: %w", err)}
			}
			return nil, &stepError{StatusError, fmt.Errorf("limiter: %w", err)}
		}
	}
	req := &http.Request{
		Method:     http.MethodGet,
		URL:        &url.URL{Scheme: hc.scheme, Host: hc.host, Opaque: path},
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Host:       hc.host,
		Header: http.Header{
			"User-Agent": {p.c.cfg.UserAgent},
			"Accept":     {"text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"},
		},
	}
	now = time.Now()
	p.c.robots.sent(hc.host, now)
	deadline := now.Add(p.c.cfg.RequestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	hc.nc.SetDeadline(deadline) // for the body too, which the caller reads
	if ctx.Err() != nil {
		// Cancelled while the deadline was being moved: keep the
		// cancellation's past deadline.
		hc.nc.SetDeadline(time.Unix(1, 0))
	}
	if err := req.Write(hc.nc); err != nil {
		hc.close()
		return nil, fmt.Errorf("write request: %w", err)
	}
	resp, err := http.ReadResponse(hc.br, req)
	if err != nil {
		hc.close()
		return nil, fmt.Errorf("read response: %w", err)
	}
	return resp, nil
}

// done finishes with resp: the rest of a short body is read so the
// connection can carry the next request; a long one closes it.
func (hc *httpConn) done(resp *http.Response) {
	const drainMax = 64 << 10
	n, err := io.CopyN(io.Discard, resp.Body, drainMax)
	resp.Body.Close()
	if !(err == io.EOF && n < drainMax) || resp.Close {
		hc.close()
	}
}

// robotsFor returns the robots.txt policy of hc's host, from the cache or
// fetched over hc.
func (p *probe) robotsFor(ctx context.Context, hc *httpConn) (*robots, string, string, error) {
	if r := p.c.robots.get(hc.host, time.Now()); r != nil {
		return r, StatusOK, "cached", nil
	}
	resp, err := p.do(ctx, hc, "/robots.txt")
	if err != nil {
		status, detail := classify(ctx, err, StatusError)
		if status == StatusTimeout {
			return nil, status, detail, err
		}
		// Unreachable: RFC 9309 §2.3.1.4 says assume complete disallow.
		p.c.robots.put(hc.host, denyAll, time.Now())
		return denyAll, status, detail, nil
	}
	defer hc.done(resp)
	var r *robots
	status := StatusOK
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		body := &capReader{r: resp.Body, n: robotsCap}
		r = parseRobots(body)
		if body.err != nil {
			status, detail := classify(ctx, body.err, StatusError)
			if status == StatusTimeout {
				return nil, status, "reading robots.txt: " + detail, body.err
			}
			r, status = denyAll, StatusError // unreachable, in effect
		}
	case c >= 500:
		r, status = denyAll, httpStatus(c)
	default:
		// 4xx means no robots.txt; a redirect is treated as unavailable
		// too rather than followed (RFC 9309 allows either).
		r, status = allowAll, httpStatus(c)
	}
	if ctx.Err() != nil {
		return nil, StatusTimeout, "reading robots.txt", ctx.Err()
	}
	p.c.robots.put(hc.host, r, time.Now())
	return r, status, "", nil
}

func httpStatus(code int) string { return "http_" + strconv.Itoa(code) }

// conns holds the probe's open connections by scheme and host.
type conns map[string]*httpConn

func (cs conns) closeAll() {
	for _, hc := range cs {
		if hc.usable {
			hc.close()
		}
	}
}

// fetch runs the HTTPS steps: the certificate of the first connection,
// robots.txt, then the page and its redirects.
func (p *probe) fetch(ctx context.Context, addrs []netip.Addr) {
	open := conns{}
	defer open.closeAll()

	hc, cs, err := p.connect(ctx, "https", p.host, "443", addrs)
	if err != nil {
		status, detail := classify(ctx, err, StatusConnectError)
		p.setRest(status, detail)
		return
	}
	open["https://"+p.host+":443"] = hc
	p.recordCert(cs)

	rules, status, detail, err := p.robotsFor(ctx, hc)
	p.set(StepRobots, status, detail)
	if err != nil {
		p.setRest(StatusTimeout, "")
		return
	}

	u := &url.URL{Scheme: "https", Host: p.host, Path: "/"}
	visited := map[string]bool{u.String(): true}
	for hops := 0; ; hops++ {
		host, err := queue.NormalizeHost(u.Hostname())
		if err != nil {
			p.set(StepPage, StatusError, "redirect to "+err.Error())
			return
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
		}
		key := u.Scheme + "://" + host + ":" + port
		hc := open[key]
		if hc == nil || !hc.usable {
			hc, err = p.reconnect(ctx, u.Scheme, host, port, addrs)
			if err != nil {
				status, detail := classify(ctx, err, StatusConnectError)
				p.set(StepPage, status, detail)
				return
			}
			open[key] = hc
		}
		if rules == nil {
			r, status, detail, err := p.robotsFor(ctx, hc)
			if err != nil {
				p.set(StepPage, status, "robots.txt of "+host+": "+detail)
				return
			}
			rules = r
		}
		path := u.EscapedPath()
		if path == "" {
			path = "/"
		}
		if u.RawQuery != "" {
			path += "?" + u.RawQuery
		}
		if !rules.allowed(path) {
			p.set(StepPage, StatusRobotsBlocked, host+path)
			return
		}
		resp, err := p.do(ctx, hc, path)
		if err != nil {
			status, detail := classify(ctx, err, StatusError)
			p.set(StepPage, status, detail)
			return
		}
		code := resp.StatusCode
		if loc := resp.Header.Get("Location"); code >= 300 && code < 400 && loc != "" {
			hc.done(resp)
			next, err := resolve(u, loc)
			switch {
			case err != nil || next.Scheme != "http" && next.Scheme != "https":
				p.set(StepPage, StatusError, "bad redirect to "+strconv.Quote(loc))
				return
			case hops+1 > p.c.cfg.MaxRedirects:
				p.set(StepPage, StatusTooManyRedirects, fmt.Sprintf("more than %d", p.c.cfg.MaxRedirects))
				return
			}
			next.Fragment, next.RawFragment = "", ""
			if visited[next.String()] {
				p.set(StepPage, StatusTooManyRedirects, "loop at "+next.String())
				return
			}
			visited[next.String()] = true
			if h, err := queue.NormalizeHost(next.Hostname()); err == nil {
				p.discover(h)
				if h != host {
					rules = nil
				}
			}
			u = next
			continue
		}
		p.page(ctx, hc, resp, u)
		return
	}
}

// reconnect opens a connection for a redirect hop or after the server
// closed the previous one: to the probed host's own addresses, or to a
// redirect target's, looked up and guarded like the probed host's.
func (p *probe) reconnect(ctx context.Context, scheme, host, port string, own []netip.Addr) (*httpConn, error) {
	addrs := own
	if host != p.host {
		all, err := p.c.resolver.lookupAddrs(ctx, host)
		if err != nil {
			return nil, err
		}
		if addrs = p.c.dialable(all); len(addrs) == 0 {
			if len(all) == 0 {
				return nil, &stepError{StatusNoAddress, fmt.Errorf("%s: %w", host, errNoAddress)}
			}
			return nil, &stepError{StatusPrivateAddress, fmt.Errorf("%s: %w", host, errNoAddress)}
		}
	}
	hc, _, err := p.connect(ctx, scheme, host, port, addrs)
	return hc, err
}

// page reads the final response of the page fetch and records its links.
func (p *probe) page(ctx context.Context, hc *httpConn, resp *http.Response, u *url.URL) {
	defer hc.done(resp)
	code := resp.StatusCode
	if code < 200 || code > 299 {
		p.set(StepPage, httpStatus(code), "")
		return
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/html" && mt != "application/xhtml+xml" {
		p.set(StepPage, StatusNotHTML, resp.Header.Get("Content-Type"))
		return
	}
	body := &capReader{r: resp.Body, n: p.c.cfg.BodyCap}
	links := ExtractLinks(body, u)
	if body.err != nil {
		status, detail := classify(ctx, body.err, StatusError)
		p.set(StepPage, status, "reading page: "+detail)
		return
	}
	apex := Apex(p.host)
	for _, h := range links {
		p.discover(h)
		if Apex(h) != apex {
			p.edge(LinksTo, h)
		}
	}
	detail := ""
	if body.truncated {
		detail = "truncated"
		hc.close()
	}
	p.set(StepPage, StatusOK, detail)
}

// capReader reads at most n bytes of r, noting whether r had more and the
// first error other than io.EOF.
type capReader struct {
	r         io.Reader
	n         int64
	truncated bool
	err       error
}

func (c *capReader) Read(b []byte) (int, error) {
	if c.n <= 0 {
		if !c.truncated {
			var one [1]byte
			if k, _ := io.ReadFull(c.r, one[:]); k > 0 {
				c.truncated = true
			}
		}
		return 0, io.EOF
	}
	if int64(len(b)) > c.n {
		b = b[:c.n]
	}
	k, err := c.r.Read(b)
	c.n -= int64(k)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return k, err
}

// lookupAddrs resolves host's A and AAAA records, for a redirect target.
func (r *resolver) lookupAddrs(ctx context.Context, host string) ([]netip.Addr, error) {
	msgs, errs := r.exchange(ctx, host, lookupTypes[:2])
	var addrs []netip.Addr
	var err error
	for i, m := range msgs {
		if m == nil {
			err = errs[i]
			continue
		}
		addrs = append(addrs, answerAddrs(m)...)
	}
	if len(addrs) == 0 && err != nil {
		if ctx.Err() != nil || isTimeout(err) {
			return nil, &stepError{StatusTimeout, fmt.Errorf("resolve %s: %w", host, err)}
		}
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	sortAddrs(addrs)
	return addrs, nil
}
