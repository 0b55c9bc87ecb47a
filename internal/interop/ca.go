package interop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"time"
)

// KeyKind is the key type of a certificate the CA issues.
type KeyKind string

// The key kinds a site's certificate can have.
const (
	RSA2048 KeyKind = "rsa2048"
	RSA4096 KeyKind = "rsa4096"
	P256    KeyKind = "p256"
	P384    KeyKind = "p384"
	Ed25519 KeyKind = "ed25519"
)

// CA is the world's private certificate authority: a root, and an
// intermediate that signs the sites' certificates (so a server that leaves
// the intermediate out of its chain serves a chain that does not verify).
type CA struct {
	Root      *x509.Certificate
	rootKey   crypto.Signer
	inter     *x509.Certificate
	interKey  crypto.Signer
	serial    int64
	notBefore time.Time
}

// NewCA returns a CA whose certificates are valid from an hour ago.
func NewCA() (*CA, error) {
	ca := &CA{notBefore: time.Now().Add(-time.Hour)}
	key, err := newKey(P256)
	if err != nil {
		return nil, err
	}
	ca.Root, err = ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: "Interop Root CA"}, IsCA: true}, key.Public(), nil, key)
	if err != nil {
		return nil, err
	}
	ca.rootKey = key
	if ca.interKey, err = newKey(P256); err != nil {
		return nil, err
	}
	ca.inter, err = ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: "Interop Issuing CA"}, IsCA: true}, ca.interKey.Public(), ca.Root, key)
	return ca, err
}

// Pool returns a pool holding the CA's root.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Root)
	return p
}

// Leaf is an issued certificate: its chain (leaf, then intermediate unless
// left out) and key as PEM files, and the hash of its key as USES_CERT
// edges name it.
type Leaf struct {
	ChainFile, KeyFile string
	SPKI               string
}

// LeafSpec says what certificate to issue.
type LeafSpec struct {
	Names   []string
	Key     KeyKind
	Expired bool // valid until an hour ago
	Self    bool // self-signed rather than issued by the CA
	NoInter bool // the chain file leaves the intermediate out
	// DupExt gives the certificate an extension twice, which RFC 5280
	// forbids: OpenSSL serves it, Go's parser (like browsers') rejects it.
	DupExt   bool
	CertFile string
}

// Issue issues the certificate spec asks for and writes its chain and key
// next to spec.CertFile (".key" added for the key).
func (ca *CA) Issue(spec LeafSpec) (*Leaf, error) {
	key, err := newKey(spec.Key)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: spec.Names[0]}, DNSNames: spec.Names}
	if spec.DupExt {
		ext := pkix.Extension{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 1}, Value: []byte{5, 0}}
		tmpl.ExtraExtensions = []pkix.Extension{ext, ext}
	}
	parent, signer := ca.inter, ca.interKey
	if spec.Self {
		parent, signer = nil, key
	}
	var cert *x509.Certificate
	if spec.Expired {
		tmpl.NotBefore, tmpl.NotAfter = ca.notBefore.Add(-48*time.Hour), ca.notBefore
		cert, err = ca.sign(tmpl, key.Public(), parent, signer)
	} else {
		cert, err = ca.issue(tmpl, key.Public(), parent, signer)
	}
	if err != nil {
		return nil, err
	}
	chain := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	if !spec.Self && !spec.NoInter {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.inter.Raw})...)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	l := &Leaf{ChainFile: spec.CertFile, KeyFile: spec.CertFile + ".key"}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	l.SPKI = hex.EncodeToString(sum[:])
	if err := os.WriteFile(l.ChainFile, chain, 0o644); err != nil {
		return nil, err
	}
	return l, os.WriteFile(l.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o644)
}

// issue signs tmpl, valid from the CA's start for a year.
func (ca *CA) issue(tmpl *x509.Certificate, pub crypto.PublicKey, parent *x509.Certificate, signer crypto.Signer) (*x509.Certificate, error) {
	tmpl.NotBefore, tmpl.NotAfter = ca.notBefore, ca.notBefore.Add(365*24*time.Hour)
	return ca.sign(tmpl, pub, parent, signer)
}

func (ca *CA) sign(tmpl *x509.Certificate, pub crypto.PublicKey, parent *x509.Certificate, signer crypto.Signer) (*x509.Certificate, error) {
	ca.serial++
	tmpl.SerialNumber = big.NewInt(ca.serial)
	tmpl.BasicConstraintsValid = true
	if tmpl.IsCA {
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	} else {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		if _, ok := pub.(*rsa.PublicKey); ok {
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		}
	}
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, fmt.Errorf("interop: sign %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil && len(tmpl.ExtraExtensions) > 0 {
		return &x509.Certificate{Raw: der}, nil // made not to parse (DupExt)
	}
	return cert, err
}

// newKey returns a new private key of kind k.
func newKey(k KeyKind) (crypto.Signer, error) {
	switch k {
	case RSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	case RSA4096:
		return rsa.GenerateKey(rand.Reader, 4096)
	case P256, "":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case P384:
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case Ed25519:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	}
	return nil, fmt.Errorf("interop: unknown key kind %q", k)
}
