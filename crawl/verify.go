package crawl

import (
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"sync"
	"time"
)

// verifyCacheSize bounds the chains whose verification is remembered; at
// a few hundred bytes each, the cache stays around a megabyte.
const verifyCacheSize = 4096

// verifyCacheTTL is how long a remembered result stands: the roots it was
// checked against are the same for the whole crawl, and a result is
// dropped earlier when the clock leaves its chain's validity window.
const verifyCacheTTL = time.Hour

// verifyCache remembers, per certificate chain as the server sent it, the
// outcome of verifying the chain against the roots without a host name.
// Many hosts share one certificate (a provider's, a domain's wildcard), and
// verifying a chain costs a signature check per link, so a crawl checks
// each chain once and each host's name against it. It is safe for
// concurrent use.
type verifyCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]verifyResult
}

// verifyResult is a chain's verification error (nil: it verified) and the
// span of time over which it holds: the intersection of the certificates'
// validity windows and the cache's TTL. The error keeps only its message:
// x509's errors hold the certificate they are about, which the cache
// would otherwise keep alive.
type verifyResult struct {
	err         error
	from, until time.Time
}

func newVerifyCache() *verifyCache {
	return &verifyCache{m: make(map[[sha256.Size]byte]verifyResult)}
}

// verify verifies chain (leaf first, then the intermediates the server sent)
// for host at now against roots, as x509.Certificate.Verify does with
// DNSName set, and returns its error. The name is checked on every call;
// the chain's signatures only when no result for it holds at now.
func (vc *verifyCache) verify(chain []*x509.Certificate, host string, roots *x509.CertPool, now time.Time) error {
	leaf := chain[0]
	if leaf.VerifyHostname(host) != nil {
		// Rare, and Verify orders its checks (validity, then name, then
		// chain): let it say which comes first.
		_, err := leaf.Verify(verifyOptions(chain, host, roots, now))
		return err
	}
	key := chainKey(chain)
	vc.mu.Lock()
	r, ok := vc.m[key]
	vc.mu.Unlock()
	if ok && !now.Before(r.from) && now.Before(r.until) {
		return r.err
	}
	_, err := leaf.Verify(verifyOptions(chain, "", roots, now))
	// The result holds while every certificate the server sent stays
	// within its validity window; one computed outside it (an expired or
	// not yet valid certificate) is not kept.
	r = verifyResult{until: now.Add(verifyCacheTTL)}
	if err != nil {
		r.err = errors.New(err.Error())
	}
	for _, c := range chain {
		if c.NotBefore.After(r.from) {
			r.from = c.NotBefore
		}
		if c.NotAfter.Before(r.until) {
			r.until = c.NotAfter
		}
	}
	if now.Before(r.from) || !now.Before(r.until) {
		return err
	}
	vc.mu.Lock()
	if len(vc.m) >= verifyCacheSize {
		clear(vc.m) // cheaper than an LRU, and rare: certificates repeat
	}
	vc.m[key] = r
	vc.mu.Unlock()
	return err
}

// verifyOptions are the options of a verification of chain[0] against
// roots with chain[1:] as intermediates.
func verifyOptions(chain []*x509.Certificate, host string, roots *x509.CertPool, now time.Time) x509.VerifyOptions {
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	return x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter, CurrentTime: now}
}

// chainKey identifies a chain by the SHA-256 of its certificates' DER.
func chainKey(chain []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range chain {
		var n [4]byte
		n[0], n[1], n[2], n[3] = byte(len(c.Raw)>>24), byte(len(c.Raw)>>16), byte(len(c.Raw)>>8), byte(len(c.Raw))
		h.Write(n[:])
		h.Write(c.Raw)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}
