// Package tables writes spyder's graph as Parquet tables, one folder per
// table under a directory: domains/, ips/, certs/, edges/ and probes/. The
// columns are typed (timestamps are timestamps, lists are lists), pages are
// zstd-compressed, and every row carries the probe, run and batch that
// wrote it, so the tables of a whole fleet can be read as one.
//
// A part file is written under a hidden temporary name, synced and renamed
// into place, so an engine globbing a table's *.parquet never meets a file
// that is being written or was cut short by a crash.
//
// It imports nothing of spyder's but the output's vocabulary (packages
// spyder and host), so both the run's sink and the graph tools use it.
package tables

import (
	"slices"
	"time"

	"github.com/spyder-crawler/spyder"
)

// Names of the tables, each a folder of part files.
const (
	Domains = "domains"
	IPs     = "ips"
	Certs   = "certs"
	Edges   = "edges"
	Probes  = "probes"
)

// Names lists the tables in the order a part writes them.
var Names = []string{Domains, IPs, Certs, Edges, Probes}

// origin is the batch a row came from; every table's rows end with it.
type origin struct {
	ProbeID string `parquet:"probe_id,dict"`
	RunID   string `parquet:"run_id,dict"`
	BatchID string `parquet:"batch_id,dict"`
}

// DomainRow is a row of the domains table: a [spyder.DomainNode].
type DomainRow struct {
	Host      string    `parquet:"host"`
	Apex      string    `parquet:"apex"`
	FirstSeen time.Time `parquet:"first_seen,timestamp(millisecond)"`
	LastSeen  time.Time `parquet:"last_seen,timestamp(millisecond)"`
	TXT       []string  `parquet:"txt,list"`
	origin
}

// IPRow is a row of the ips table: a [spyder.IPNode]. The AS columns are
// null without an ASN database, as the JSON leaves them out.
type IPRow struct {
	IP        string    `parquet:"ip"`
	FirstSeen time.Time `parquet:"first_seen,timestamp(millisecond)"`
	LastSeen  time.Time `parquet:"last_seen,timestamp(millisecond)"`
	ASN       *uint32   `parquet:"asn,optional"`
	ASOrg     *string   `parquet:"as_org,optional,dict"`
	Prefix    *string   `parquet:"prefix,optional"`
	origin
}

// CertRow is a row of the certs table: a [spyder.CertNode].
type CertRow struct {
	SPKISHA256 string    `parquet:"spki_sha256"`
	SubjectCN  string    `parquet:"subject_cn"`
	IssuerCN   string    `parquet:"issuer_cn,dict"`
	NotBefore  time.Time `parquet:"not_before,timestamp(millisecond)"`
	NotAfter   time.Time `parquet:"not_after,timestamp(millisecond)"`
	SANs       []string  `parquet:"sans,list"`
	Verified   bool      `parquet:"verified"`
	origin
}

// EdgeRow is a row of the edges table: a [spyder.Edge], whose type is a
// column. Its probe and run are the edge's own.
type EdgeRow struct {
	Type       string    `parquet:"type,dict"`
	Source     string    `parquet:"source"`
	Target     string    `parquet:"target"`
	ObservedAt time.Time `parquet:"observed_at,timestamp(millisecond)"`
	origin
}

// ProbeRow is a row of the probes table: one visited host's
// [spyder.HostOutcome], every step in Steps and, for queries that need no
// unnesting, each step's status in a column of its own (null when the step
// did not run) and the visit's outcome as `graph summary` counts it.
type ProbeRow struct {
	Host    string    `parquet:"host"`
	Outcome string    `parquet:"outcome,dict"` // [spyder.HostOutcome.PageOutcome]
	DNS     *string   `parquet:"dns,optional,dict"`
	TLS     *string   `parquet:"tls,optional,dict"`
	Robots  *string   `parquet:"robots,optional,dict"`
	Page    *string   `parquet:"page,optional,dict"`
	Steps   []StepRow `parquet:"steps,list"`
	At      time.Time `parquet:"timestamp,timestamp(millisecond)"` // the batch's
	origin
}

// StepRow is one step of a [ProbeRow]: a [spyder.StepOutcome].
type StepRow struct {
	Step      string        `parquet:"step"`
	Status    string        `parquet:"status"`
	Detail    *string       `parquet:"detail,optional"`
	Resolvers []ResolverRow `parquet:"resolvers,list"`
}

// ResolverRow is a [spyder.ResolverCounts].
type ResolverRow struct {
	Server    string `parquet:"server"`
	Answers   uint64 `parquet:"answers"`
	Timeouts  uint64 `parquet:"timeouts"`
	Errors    uint64 `parquet:"errors"`
	ServFail  uint64 `parquet:"servfail"`
	Refused   uint64 `parquet:"refused"`
	Truncated uint64 `parquet:"truncated"`
}

// orNull is nil for v's zero value, which the JSON leaves out, so that
// the column holds a null for it; else a pointer to v.
func orNull[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// unix is a timestamp of the output (Unix seconds) as a UTC time.
func unix(s int64) time.Time { return time.Unix(s, 0).UTC() }

func domainRow(n *spyder.DomainNode, o origin) DomainRow {
	return DomainRow{Host: string(n.Host), Apex: string(n.Apex), FirstSeen: unix(n.FirstSeen),
		LastSeen: unix(n.LastSeen), TXT: slices.Clone(n.TXT), origin: o}
}

func ipRow(n *spyder.IPNode, o origin) IPRow {
	return IPRow{IP: n.IP, FirstSeen: unix(n.FirstSeen), LastSeen: unix(n.LastSeen),
		ASN: orNull(n.ASN), ASOrg: orNull(n.ASOrg), Prefix: orNull(n.Prefix), origin: o}
}

func certRow(n *spyder.CertNode, o origin) CertRow {
	return CertRow{SPKISHA256: n.SPKISHA256, SubjectCN: n.SubjectCN, IssuerCN: n.IssuerCN,
		NotBefore: unix(n.NotBefore), NotAfter: unix(n.NotAfter), SANs: slices.Clone(n.SANs), Verified: n.Verified, origin: o}
}

func edgeRow(e *spyder.Edge, batchID string) EdgeRow {
	return EdgeRow{Type: e.Type, Source: e.Source, Target: e.Target, ObservedAt: unix(e.ObservedAt),
		origin: origin{ProbeID: e.ProbeID, RunID: e.RunID, BatchID: batchID}}
}

func probeRow(p *spyder.HostOutcome, at int64, o origin) ProbeRow {
	r := ProbeRow{Host: string(p.Host), Outcome: p.PageOutcome(), At: unix(at), origin: o}
	for i := range p.Steps {
		s := &p.Steps[i]
		switch s.Step {
		case spyder.StepDNS:
			r.DNS = orNull(s.Status)
		case spyder.StepTLS:
			r.TLS = orNull(s.Status)
		case spyder.StepRobots:
			r.Robots = orNull(s.Status)
		case spyder.StepPage:
			r.Page = orNull(s.Status)
		}
		step := StepRow{Step: s.Step, Status: s.Status, Detail: orNull(s.Detail)}
		for _, c := range s.Resolvers {
			step.Resolvers = append(step.Resolvers, ResolverRow(c))
		}
		r.Steps = append(r.Steps, step)
	}
	return r
}
