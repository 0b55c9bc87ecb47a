package crawl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"testing"
	"time"
)

// testCert signs a certificate for names valid over [from, until) with
// parent (itself when parent is nil) and returns it with its key.
func testCert(t *testing.T, cn string, names []string, from, until time.Time, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     names,
		NotBefore:    from,
		NotAfter:     until,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// TestVerifyCache_SameAsVerify: for valid, expired, self-signed and
// wrong-name chains, first and repeated, the cache gives the error
// x509.Certificate.Verify gives with the host's name.
func TestVerifyCache_SameAsVerify(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	year := 365 * 24 * time.Hour
	ca, caKey := testCert(t, "test CA", nil, now.Add(-year), now.Add(10*year), nil, nil)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	inter, interKey := testCert(t, "test intermediate", nil, now.Add(-year), now.Add(5*year), ca, caKey)
	inter.IsCA = true
	shared, _ := testCert(t, "shared", []string{"a.example", "b.example", "*.c.example"}, now.Add(-year), now.Add(year), inter, interKey)
	expired, _ := testCert(t, "expired", []string{"a.example"}, now.Add(-2*year), now.Add(-year), inter, interKey)
	self, _ := testCert(t, "self", []string{"a.example"}, now.Add(-year), now.Add(year), nil, nil)
	chains := map[string][]*x509.Certificate{
		"shared":      {shared, inter},
		"no-inter":    {shared},
		"expired":     {expired, inter},
		"self-signed": {self},
	}
	vc := newVerifyCache()
	for round := range 2 {
		for name, chain := range chains {
			for _, host := range []string{"a.example", "b.example", "x.c.example", "other.example"} {
				got := vc.verify(chain, host, roots, now)
				_, want := chain[0].Verify(verifyOptions(chain, host, roots, now))
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("round %d, %s for %s: %v, want %v", round, name, host, got, want)
				}
			}
		}
	}
	// Only the chains that were within their validity window are kept.
	if len(vc.m) != 3 {
		t.Errorf("cache holds %d chains, want 3 (shared, no-inter, self-signed)", len(vc.m))
	}
}

// TestVerifyCache_RemembersChain: a chain verified once is not verified
// again while its result holds (roots that would now fail it are not
// consulted), but is again once the clock passes a certificate's end or
// the cache's TTL.
func TestVerifyCache_RemembersChain(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	ca, caKey := testCert(t, "test CA", nil, now.Add(-day), now.Add(100*day), nil, nil)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	leaf, _ := testCert(t, "leaf", []string{"a.example", "b.example"}, now.Add(-day), now.Add(30*day), ca, caKey)
	chain := []*x509.Certificate{leaf}
	none := x509.NewCertPool()

	vc := newVerifyCache()
	if err := vc.verify(chain, "a.example", roots, now); err != nil {
		t.Fatalf("first verification: %v", err)
	}
	if err := vc.verify(chain, "b.example", none, now.Add(time.Minute)); err != nil {
		t.Errorf("remembered chain verified again: %v", err)
	}
	if err := vc.verify(chain, "other.example", roots, now); err == nil {
		t.Error("remembered chain accepted for a name it does not cover")
	}
	if err := vc.verify(chain, "a.example", none, now.Add(verifyCacheTTL)); err == nil {
		t.Error("result kept past the cache's TTL")
	}
	if err := vc.verify(chain, "a.example", roots, now.Add(31*day)); err == nil {
		t.Error("result kept past the leaf's NotAfter")
	}
}

// TestVerifyCache_Bounded: the cache never holds more than
// verifyCacheSize chains.
func TestVerifyCache_Bounded(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	leaf, _ := testCert(t, "leaf", []string{"a.example"}, now.Add(-time.Hour), now.Add(time.Hour), nil, nil)
	vc := newVerifyCache()
	for i := range verifyCacheSize + 10 {
		c := *leaf
		c.Raw = append([]byte(fmt.Sprint(i)), leaf.Raw...) // a distinct key per chain
		vc.verify([]*x509.Certificate{&c}, "a.example", nil, now)
		if len(vc.m) > verifyCacheSize {
			t.Fatalf("cache holds %d chains after %d, bound %d", len(vc.m), i+1, verifyCacheSize)
		}
	}
}

// TestVerifyCache_KeepsNoCertificate: a remembered failure keeps its
// message, not x509's error, which holds the certificate it is about (a
// crawl of self-signed hosts would otherwise keep thousands alive).
func TestVerifyCache_KeepsNoCertificate(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	self, _ := testCert(t, "self", []string{"a.example"}, now.Add(-time.Hour), now.Add(time.Hour), nil, nil)
	chain := []*x509.Certificate{self}
	vc := newVerifyCache()
	err := vc.verify(chain, "a.example", x509.NewCertPool(), now)
	if err == nil {
		t.Fatal("self-signed chain verified")
	}
	var ua x509.UnknownAuthorityError
	if r, ok := vc.m[chainKey(chain)]; !ok || errors.As(r.err, &ua) || r.err.Error() != err.Error() {
		t.Errorf("remembered %#v (found %v), want the message %q only", r.err, ok, err)
	}
}
