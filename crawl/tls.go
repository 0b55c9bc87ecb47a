package crawl

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
)

// handshake completes a TLS handshake over nc with SNI host, within cctx
// (the connect timeout), and returns the TLS connection. After a handshake
// that succeeds it passes the connection's state to onCert, unless nil.
// The certificate is not verified by the handshake but by onCert
// (recordCert), so that a bad one is recorded rather than lost. On failure
// nc is closed and the error is a timeout if cctx ended or the handshake
// timed out, else a TLS error.
func handshake(cctx context.Context, nc net.Conn, host string, onCert func(*tls.ConnectionState)) (net.Conn, error) {
	tc := tls.Client(nc, &tls.Config{
		ServerName:         host,
		InsecureSkipVerify: true, // verified by recordCert, so bad certificates are recorded
		NextProtos:         []string{"http/1.1"},
		// Classic key exchange only: the post-quantum hybrid Go
		// offers by default costs a few times the CPU of the whole
		// X25519 exchange on both sides, for pages that are public.
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256},
	})
	// The handshake and onCert run on a goroutine of their own: they are
	// the deepest call chains of a probe (key exchange, certificate
	// parsing, the signature checks of the handshake and of the chain's
	// verification), and the stack they grow is freed when they end
	// rather than kept by the probe's goroutine while it waits on the
	// network. The probe's goroutine waits for them, so onCert may write
	// to the probe.
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
			return nil, &stepError{StatusTimeout, fmt.Errorf("tls handshake: %w", err)}
		}
		return nil, &stepError{StatusTLSError, err}
	}
	return tc, nil
}

// recordCert records the leaf certificate of the host's first TLS
// connection, verified against RootCAs for the host's name (the chain's
// signatures once per crawl, through the crawler's verifyCache).
func (p *probe) recordCert(cs *tls.ConnectionState) {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		p.set(StepTLS, StatusTLSError, "no certificate")
		return
	}
	leaf := cs.PeerCertificates[0]
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	spki := hex.EncodeToString(sum[:])
	verr := p.c.verified.verify(cs.PeerCertificates, p.host, p.c.cfg.RootCAs, p.c.cfg.Now())
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
