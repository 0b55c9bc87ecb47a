package crawltest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/spyder-crawler/spyder"
)

// certKind is how a host's certificate is wrong, if it is.
type certKind int

const (
	certValid      certKind = iota // signed by the test CA for the host's names
	certExpired                    // signed by the CA, expired in 2021
	certSelfSigned                 // signed by its own key
	certWrongName                  // signed by the CA for another name only
)

func (k certKind) String() string {
	return [...]string{"valid", "expired", "self-signed", "wrong-name"}[k]
}

// Validity windows are fixed so that the world is a pure function of its
// options; the valid window spans any plausible test clock.
var (
	validFrom   = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	validUntil  = time.Date(2045, 1, 1, 0, 0, 0, 0, time.UTC)
	expiredFrom = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	expiredTill = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
)

// certSpec is one leaf certificate of the plan. Its key is derived from the
// seed at plan time (the SPKI hash is part of Expected); the certificate
// itself is signed on the first handshake that needs it.
type certSpec struct {
	id    int
	kind  certKind
	cn    string
	names []string // SANs
	key   *ecdsa.PrivateKey
	spki  string // hex SHA-256 of the SubjectPublicKeyInfo

	once sync.Once
	tls  *tls.Certificate
	err  error
}

// ca is the world's certificate authority.
type ca struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
}

// deriveKey makes an ECDSA P-256 key from r, so that keys (and their SPKI
// hashes) are reproducible for a seed. It is much cheaper than generating
// and needs no entropy.
func deriveKey(r *mrand.Rand) (*ecdsa.PrivateKey, error) {
	var b [32]byte
	for {
		for i := 0; i < len(b); i += 8 {
			v := r.Uint64()
			for j := 0; j < 8; j++ {
				b[i+j] = byte(v >> (8 * j))
			}
		}
		b[0] &= 0x7f // below the curve order, almost always valid
		k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), b[:])
		if err == nil {
			return k, nil
		}
	}
}

func spkiHash(k *ecdsa.PrivateKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return "", fmt.Errorf("marshal public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:]), nil
}

func newCA(r *mrand.Rand) (*ca, error) {
	key, err := deriveKey(r)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "crawltest root CA", Organization: []string{"spyder crawltest"}},
		NotBefore:             validFrom,
		NotAfter:              validUntil,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA: %w", err)
	}
	return &ca{key: key, cert: cert}, nil
}

// certificate returns the signed certificate, creating it on first use.
func (c *certSpec) certificate(auth *ca) (*tls.Certificate, error) {
	c.once.Do(func() { c.tls, c.err = c.sign(auth) })
	return c.tls, c.err
}

func (c *certSpec) sign(auth *ca) (*tls.Certificate, error) {
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(int64(c.id) + 2),
		Subject:      pkix.Name{CommonName: c.cn},
		NotBefore:    validFrom,
		NotAfter:     validUntil,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     c.names,
	}
	parent, signer := auth.cert, auth.key
	switch c.kind {
	case certExpired:
		tmpl.NotBefore, tmpl.NotAfter = expiredFrom, expiredTill
	case certSelfSigned:
		parent, signer = tmpl, c.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &c.key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("create certificate %s: %w", c.cn, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse certificate %s: %w", c.cn, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: c.key, Leaf: leaf}, nil
}

// certificates gives every site its certificate: per registered domain one
// shared certificate (its names and a wildcard), one per host, or a
// hosting provider's certificate shared by several unrelated domains; bad
// certificates are always the host's own. Keys are derived in plan order.
func (g *gen) certificates() error {
	byApex := make(map[string][]*site)
	for _, h := range sortedKeys(g.p.sites) {
		s := g.p.sites[h]
		byApex[s.apex] = append(byApex[s.apex], s)
	}
	newSpec := func(kind certKind, names ...string) *certSpec {
		c := &certSpec{id: len(g.p.certs), kind: kind, cn: names[0], names: dedupe(names)}
		g.p.certs = append(g.p.certs, c)
		return c
	}
	var bundle *certSpec // the hosting provider's certificate being filled
	for _, apex := range sortedKeys(byApex) {
		var good []*site
		for _, s := range byApex[apex] {
			switch {
			case s.tlsFail:
			case s.sans > 0:
				names := []string{s.host}
				for i := 1; i < s.sans; i++ {
					names = append(names, strconv.Itoa(i)+".h.io")
				}
				s.spec = newSpec(certValid, names...)
			case s.cert == certWrongName:
				s.spec = newSpec(s.cert, fmt.Sprintf("wrong-name-%d.example", len(g.p.certs)))
				s.spec.cn = s.host
			case s.cert != certValid:
				s.spec = newSpec(s.cert, s.host)
			default:
				good = append(good, s)
			}
		}
		if len(good) == 0 {
			continue
		}
		var names []string
		for _, s := range good {
			names = append(names, s.host)
		}
		x := g.r.Float64()
		switch {
		case x < 0.2:
			if bundle == nil || len(bundle.names) > 12 {
				bundle = newSpec(certValid, "sni."+fmt.Sprintf("hosting%d.net", len(g.p.certs)))
			}
			bundle.names = append(bundle.names, names...)
			for _, s := range good {
				s.spec = bundle
			}
		case x < 0.7:
			c := newSpec(certValid, append([]string{apex, "*." + apex}, names...)...)
			for _, s := range good {
				s.spec = c
			}
		default:
			for _, s := range good {
				s.spec = newSpec(certValid, s.host)
			}
		}
	}
	for _, c := range g.p.certs {
		k, err := deriveKey(g.r)
		if err != nil {
			return err
		}
		c.key = k
		if c.spki, err = spkiHash(k); err != nil {
			return err
		}
	}
	return nil
}

// node is the CertNode a crawler records for c: verified when it is the
// CA's for the host's name and current (every valid certificate is used
// only by hosts it names).
func (c *certSpec) node(auth *ca) spyder.CertNode {
	n := spyder.CertNode{
		SPKISHA256: c.spki,
		SubjectCN:  c.cn,
		IssuerCN:   auth.cert.Subject.CommonName,
		NotBefore:  validFrom.Unix(),
		NotAfter:   validUntil.Unix(),
		SANs:       append([]string(nil), c.names...),
		Verified:   c.kind == certValid,
	}
	switch c.kind {
	case certExpired:
		n.NotBefore, n.NotAfter = expiredFrom.Unix(), expiredTill.Unix()
	case certSelfSigned:
		n.IssuerCN = c.cn
	}
	return n
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
