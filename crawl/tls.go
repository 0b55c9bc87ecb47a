package crawl

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/spyder-crawler/spyder"
)

// Key exchanges a handshake offers. Go sends a key share for the first
// group of its own fixed order (X25519, P-256, P-384, P-521) that
// Config.CurvePreferences allows, so the order of these lists does not
// choose the share: the lists do. The first try shares a P-256 key: every
// TLS 1.3 server must support it, and a client's P-256 key generation and
// exchange take about three quarters of X25519's CPU (Go computes P-256
// key generation from a precomputed table). It also offers P-384 and
// P-521, which cost nothing until a server picks them: a TLS 1.3 server
// that accepts only those asks for a share of one (HelloRetryRequest), and
// a TLS 1.2 server with an ECDSA P-384 certificate may use it only when
// the client lists P-384. A server that refuses all three (one configured
// for X25519 alone) is asked again, on a new connection, with X25519 first;
// see isHandshakeFailure. Neither offers the post-quantum hybrid Go would
// send by default, which costs a few times the CPU of the whole classic
// exchange on both sides, for pages that are public.
var (
	curvesFirst    = []tls.CurveID{tls.CurveP256, tls.CurveP384, tls.CurveP521}
	curvesFallback = []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521}
)

// handshake completes a TLS handshake over nc with SNI host, offering
// curves, within cctx (the connect timeout), and returns the TLS
// connection. After a handshake that succeeds it passes the connection's
// state to onCert, unless nil. The certificate is not verified by the
// handshake but by onCert (recordCert), so that a bad one is recorded
// rather than lost. On failure nc is closed and the error is a timeout if
// cctx ended or the handshake timed out, else a TLS error.
func handshake(cctx context.Context, nc net.Conn, host string, curves []tls.CurveID, onCert func(*tls.ConnectionState)) (net.Conn, error) {
	tc := tls.Client(&finishedConn{Conn: nc}, &tls.Config{
		ServerName:         host,
		InsecureSkipVerify: true, // verified by recordCert, so bad certificates are recorded
		NextProtos:         []string{"http/1.1"},
		CurvePreferences:   curves,
	})
	// The handshake and onCert run on a goroutine of their own: they are
	// the deepest call chains of a visit (key exchange, certificate
	// parsing, the signature checks of the handshake and of the chain's
	// verification), and the stack they grow is freed when they end
	// rather than kept by the visit's goroutine while it waits on the
	// network. The visit's goroutine waits for them, so onCert may write
	// to the visit.
	done := make(chan error, 1)
	go func() {
		err := tc.HandshakeContext(cctx)
		if err == nil && onCert != nil {
			cs := tc.ConnectionState()
			onCert(&cs)
		}
		done <- err
	}()
	if err := <-done; err != nil {
		nc.Close()
		if cctx.Err() != nil || isTimeout(err) {
			return nil, &stepError{spyder.StatusTimeout, fmt.Errorf("tls handshake: %w", err)}
		}
		return nil, &stepError{spyder.StatusTLSError, tlsFailure(err)}
	}
	return tc, nil
}

// tlsReasons name why a handshake failed, by the text of its error: the
// server's alert (a "remote error") or crypto/tls's own refusal.
var tlsReasons = []struct{ match, reason string }{
	{"remote error: tls: handshake failure", "no common key exchange group or cipher suite"},
	{"remote error: tls: insufficient security level", "no common key exchange group or cipher suite"},
	{"server selected unsupported curve", "no common key exchange group or cipher suite"},
	{"unconfigured cipher suite", "no common key exchange group or cipher suite"},
	{"remote error: tls: protocol version not supported", "no common protocol version"},
	{"server selected unsupported protocol version", "no common protocol version"},
	{"remote error: tls: internal error", "server error"}, // e.g. no certificate for the name (Caddy)
	{"certificate", "certificate"},
	{"first record does not look like a TLS handshake", "not TLS"},
}

// tlsFailure returns err with why the handshake failed put before it (see
// tlsReasons), so that a tls step's detail tells a server that shares
// nothing with the client from a broken certificate, a server that failed
// on its side or one that does not speak TLS; err as it is when the reason
// is none of those.
func tlsFailure(err error) error {
	msg := err.Error()
	for _, r := range tlsReasons {
		if strings.Contains(msg, r.match) {
			return fmt.Errorf("%s: %w", r.reason, err)
		}
	}
	return err
}

// isHandshakeFailure reports whether err is the server's handshake_failure
// alert: what a server sends when it shares no key exchange with the
// client (and for other refusals, which a second try costs only a
// connection).
func isHandshakeFailure(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error" && oe.Err != nil &&
		oe.Err.Error() == "tls: handshake failure"
}

// finishedConn is the TCP connection under a TLS client. It holds back
// the first write made after the handshake has read from the server (the
// client's Finished flight in TLS 1.3) and sends it with the next write
// (the first request) in one system call and one segment, or before the
// next read, whichever comes first. So the server sees the handshake end
// when the first request arrives, and a connection on which nothing is
// sent does not send its Finished at all. Its reads and writes must not
// run at once; a visit's never do.
//
// While peek is set, a read that would go to the TCP connection returns
// errWouldWait instead, telling its caller that the TLS connection holds
// nothing more to read (see httpConn.readFirst).
type finishedConn struct {
	net.Conn
	state uint8
	peek  bool
	held  []byte // the held write, while state is holding
}

// errWouldWait is a peeking finishedConn's answer to a read. It is a
// temporary net.Error, which crypto/tls returns to its caller without
// failing the connection, as it does a read deadline's.
var errWouldWait net.Error = wouldWait{}

type wouldWait struct{}

func (wouldWait) Error() string   { return "crawl: nothing to read yet" }
func (wouldWait) Timeout() bool   { return true }
func (wouldWait) Temporary() bool { return true }

// States of a finishedConn, in the order it goes through them.
const (
	beforeRead = iota // writes go out (the ClientHello)
	holdNext          // the next write is held
	holding           // a write is held
	passing           // reads and writes go straight through
)

func (c *finishedConn) Read(b []byte) (int, error) {
	switch c.state {
	case beforeRead:
		c.state = holdNext
	case holding:
		c.state = passing
		held := c.held
		c.held = nil
		if _, err := c.Conn.Write(held); err != nil {
			return 0, err
		}
	}
	if c.peek {
		return 0, errWouldWait
	}
	return c.Conn.Read(b)
}

func (c *finishedConn) Write(b []byte) (int, error) {
	switch c.state {
	case holdNext:
		c.state = holding
		c.held = append(make([]byte, 0, len(b)+512), b...) // room for a request
		return len(b), nil
	case holding:
		c.state = passing
		held := append(c.held, b...)
		c.held = nil
		n, err := c.Conn.Write(held)
		return max(0, n-(len(held)-len(b))), err
	}
	return c.Conn.Write(b)
}

// recordCert records the leaf certificate of the host's first TLS
// connection, verified against RootCAs for the host's name (the chain's
// signatures once per crawl, through the crawler's verifyCache).
func (p *visit) recordCert(cs *tls.ConnectionState) {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		p.set(spyder.StepTLS, spyder.StatusTLSError, "no certificate")
		return
	}
	leaf := cs.PeerCertificates[0]
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	spki := hex.EncodeToString(sum[:])
	verr := p.c.verified.verify(cs.PeerCertificates, string(p.host), p.c.cfg.RootCAs, p.c.cfg.Now())
	sans := append([]string(nil), leaf.DNSNames...)
	for _, ip := range leaf.IPAddresses {
		sans = append(sans, ip.String())
	}
	p.certs = append(p.certs, spyder.CertNode{
		SPKISHA256: spki,
		SubjectCN:  leaf.Subject.CommonName,
		IssuerCN:   leaf.Issuer.CommonName,
		NotBefore:  leaf.NotBefore.Unix(),
		NotAfter:   leaf.NotAfter.Unix(),
		SANs:       sans,
		Verified:   verr == nil,
	})
	p.edge(spyder.UsesCert, spki)
	if verr != nil {
		p.set(spyder.StepTLS, spyder.StatusUnverified, verr.Error())
	} else {
		p.set(spyder.StepTLS, spyder.StatusOK, "")
	}
}
