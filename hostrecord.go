package spyder

import "github.com/spyder-crawler/spyder/host"

// HostRecord is one line of the hosts output format: everything one visit
// of a host learned, whole, as dnsx's and httpx's JSON lines hold one host
// each. Unlike a [Batch], it leaves nothing out because another line of
// the run already holds it (a shared IP or certificate is in every line
// that found it), so each line stands alone; a host whose visit failed has
// its line too, with how each step ended.
type HostRecord struct {
	Host      host.Name `json:"host"`
	Apex      host.Name `json:"apex"`
	ProbeID   string    `json:"probe_id"`
	RunID     string    `json:"run_id"`
	Timestamp int64     `json:"timestamp"` // when it was written, Unix seconds
	// Outcome sums up Steps in one word ([HostOutcome.Summary]).
	Outcome string        `json:"outcome"`
	Steps   []StepOutcome `json:"steps"`
	TXT     []string      `json:"txt,omitempty"`
	// IPs are the addresses it resolved to (its RESOLVES_TO edges).
	IPs []IPNode `json:"ips"`
	// Certs are the leaf certificates of its TLS connections (USES_CERT).
	Certs []CertNode `json:"certs"`
	// Domains are the other hosts its edges name: name servers, mail
	// exchangers, its CNAME target, linked hosts, redirect hops.
	Domains []DomainNode `json:"domains"`
	// Edges are all it found: DNS records, its certificate, links and
	// redirects, each with its type.
	Edges []Edge `json:"edges"`
}

// NewHostRecord returns the record of r, visited by probe in run and
// written at ts (Unix seconds). The slices are r's, not copies.
func NewHostRecord(r *Result, probe, run string, ts int64) HostRecord {
	h := HostRecord{
		Host: r.Host, Apex: r.Host.Apex(), ProbeID: probe, RunID: run, Timestamp: ts,
		Outcome: r.Outcome.Summary(), Steps: r.Outcome.Steps,
		IPs: r.IPs, Certs: r.Certs, Domains: []DomainNode{}, Edges: r.Edges,
	}
	for _, d := range r.Domains {
		if d.Host == r.Host {
			h.Apex, h.TXT = d.Apex, d.TXT
		} else {
			h.Domains = append(h.Domains, d)
		}
	}
	if h.Steps == nil {
		h.Steps = []StepOutcome{}
	}
	if h.IPs == nil {
		h.IPs = []IPNode{}
	}
	if h.Certs == nil {
		h.Certs = []CertNode{}
	}
	if h.Edges == nil {
		h.Edges = []Edge{}
	}
	return h
}

// Batch returns the record as a batch of its own: the host's node first,
// then the nodes and edges it holds, and its outcome.
func (h HostRecord) Batch() Batch {
	own := DomainNode{Host: h.Host, Apex: h.Apex, FirstSeen: h.Timestamp, LastSeen: h.Timestamp, TXT: h.TXT}
	return Batch{
		ProbeID: h.ProbeID, RunID: h.RunID, Timestamp: h.Timestamp,
		NodesDomain: append([]DomainNode{own}, h.Domains...), NodesIP: h.IPs, NodesCert: h.Certs, Edges: h.Edges,
		Outcomes: []HostOutcome{{Host: h.Host, Steps: h.Steps}},
	}
}
