package spyder

import "github.com/spyder-crawler/spyder/host"

// Edge types, as the older spyder named them, so its graph readers work.
const (
	ResolvesTo = "RESOLVES_TO" // host → IP (A/AAAA)
	UsesNS     = "USES_NS"     // host → name server host
	AliasOf    = "ALIAS_OF"    // host → CNAME target (never itself)
	UsesMX     = "USES_MX"     // host → mail exchanger host
	LinksTo    = "LINKS_TO"    // page host → linked host with another apex
	UsesCert   = "USES_CERT"   // host → certificate SPKI SHA-256 (hex)
	// RedirectsTo is a followed redirect hop between hosts of different
	// registrable domains: hop host → next hop's host.
	RedirectsTo = "REDIRECTS_TO"
	// InAS is an IP address → the autonomous system announcing it, named
	// "AS" and its number ("AS13335"); only with an ASN database.
	InAS = "IN_AS"
)

// ToDomain reports whether an edge of type typ points at a host, whose
// domain node the output holds.
func ToDomain(typ string) bool {
	switch typ {
	case UsesNS, UsesMX, AliasOf, LinksTo, RedirectsTo:
		return true
	}
	return false
}

// Batch is one line of output, with the field names the older spyder
// wrote, so its graph readers work.
type Batch struct {
	ProbeID     string       `json:"probe_id"`
	RunID       string       `json:"run_id"`
	BatchID     string       `json:"batch_id"`
	Timestamp   int64        `json:"timestamp"` // Unix seconds
	NodesDomain []DomainNode `json:"nodes_domain"`
	NodesIP     []IPNode     `json:"nodes_ip"`
	NodesCert   []CertNode   `json:"nodes_cert"`
	Edges       []Edge       `json:"edges"`
	// Outcomes records each visited host's outcome per step, so that what
	// failed is in the output rather than dropped. Its JSON name is the
	// older spyder's.
	Outcomes []HostOutcome `json:"probes,omitempty"`
	// Hosts, when the batcher was asked for them (the hosts output
	// format), holds each visited host's whole record: what it found
	// before the run's deduplication. A batch line never holds it.
	Hosts []HostRecord `json:"-"`
}

// DomainNode is a host seen by the crawl (visited or discovered).
type DomainNode struct {
	Host      host.Name `json:"host"`
	Apex      host.Name `json:"apex"` // eTLD+1 by the public suffix list
	FirstSeen int64     `json:"first_seen"`
	LastSeen  int64     `json:"last_seen"`
	TXT       []string  `json:"txt,omitempty"`
}

// IPNode is an address a host resolved to. With an ASN database it also
// carries the autonomous system announcing it (the target of its IN_AS
// edge) and the announced network holding it.
type IPNode struct {
	IP        string `json:"ip"`
	FirstSeen int64  `json:"first_seen"`
	LastSeen  int64  `json:"last_seen"`
	ASN       uint32 `json:"asn,omitempty"`
	ASOrg     string `json:"as_org,omitempty"`
	Prefix    string `json:"prefix,omitempty"` // CIDR, e.g. "104.16.0.0/13"
}

// CertNode is a leaf certificate seen on a host's TLS connection, recorded
// whether or not it verified.
type CertNode struct {
	SPKISHA256 string   `json:"spki_sha256"`
	SubjectCN  string   `json:"subject_cn"`
	IssuerCN   string   `json:"issuer_cn"`
	NotBefore  int64    `json:"not_before"`
	NotAfter   int64    `json:"not_after"`
	SANs       []string `json:"sans,omitempty"`
	Verified   bool     `json:"verified"`
}

// Edge is one relation between two nodes. Source and Target are a node's
// key: a host name, an IP address, a certificate's SPKI hash or an AS
// ("AS13335"), so they are text rather than a [host.Name].
type Edge struct {
	Type       string `json:"type"`
	Source     string `json:"source"`
	Target     string `json:"target"`
	ObservedAt int64  `json:"observed_at"`
	ProbeID    string `json:"probe_id"`
	RunID      string `json:"run_id"`
}
