package crawl

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
	// Probes records each probed host's outcome per step, so that what
	// failed is in the output rather than dropped.
	Probes []ProbeOutcome `json:"probes,omitempty"`
}

// DomainNode is a host seen by the crawl (probed or discovered).
type DomainNode struct {
	Host      string   `json:"host"`
	Apex      string   `json:"apex"` // eTLD+1 by the public suffix list
	FirstSeen int64    `json:"first_seen"`
	LastSeen  int64    `json:"last_seen"`
	TXT       []string `json:"txt,omitempty"`
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

// Edge is one relation between two nodes.
type Edge struct {
	Type       string `json:"type"`
	Source     string `json:"source"`
	Target     string `json:"target"`
	ObservedAt int64  `json:"observed_at"`
	ProbeID    string `json:"probe_id"`
	RunID      string `json:"run_id"`
}

// ProbeOutcome is how each step of one host's probe ended. Status values are
// short snake_case words ("ok", "nxdomain", "timeout", "robots_blocked",
// "excluded", "tls_error", ...); Detail carries the error text, if any.
type ProbeOutcome struct {
	Host  string        `json:"host"`
	Steps []StepOutcome `json:"steps"`
}

// StepOutcome is one step's result within a [ProbeOutcome].
type StepOutcome struct {
	Step   string `json:"step"` // "dns", "robots", "page", "tls"
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Resolvers, on the dns step only, counts per resolver asked how its
	// queries ended, when a resolver's failure shaped the step: some
	// query timed out, failed, or was answered SERVFAIL, REFUSED or
	// truncated. A lookup answered at once by one resolver leaves it out.
	Resolvers []ResolverCounts `json:"resolvers,omitempty"`
}

// PageOutcome is how a probe ended, as spyder_hosts_total and `spyder
// graph summary` count it: the page step's status, or the status of the
// last step that ran when there is no page step.
func (o ProbeOutcome) PageOutcome() string {
	for _, s := range o.Steps {
		if s.Step == StepPage {
			return s.Status
		}
	}
	if n := len(o.Steps); n > 0 {
		return o.Steps[n-1].Status
	}
	return "unknown"
}

// Summary is the probe's outcome in one word, as the queue keeps it for
// the host: "ok" when the page step ended "ok"; else the DNS step's status
// when the lookup failed ("nxdomain", "timeout", "servfail", "error");
// else the page step's, which names why the page was not fetched
// ("http_503", "connect_error", "robots_blocked", "excluded", ...).
func (o ProbeOutcome) Summary() string {
	var dns, page string
	for _, s := range o.Steps {
		switch s.Step {
		case StepDNS:
			dns = s.Status
		case StepPage:
			page = s.Status
		}
	}
	switch {
	case page == StatusOK:
		return StatusOK
	case dns != "" && dns != StatusOK:
		return dns
	case page != "":
		return page
	}
	return StatusError
}
