package graph

import (
	"strconv"
	"strings"

	"github.com/spyder-crawler/spyder"
)

// attrDef is an attribute the graph formats declare, with its type in
// GraphML's and GEXF's words.
type attrDef struct{ key, typ string }

// nodeAttrs and edgeAttrs are every attribute a node or an edge may carry,
// in the order the formats declare and write them.
var (
	nodeAttrs = []attrDef{{"type", "string"}, {"apex", "string"}, {"first_seen", "long"}, {"last_seen", "long"},
		{"txt", "string"}, {"subject_cn", "string"}, {"issuer_cn", "string"}, {"not_before", "long"},
		{"not_after", "long"}, {"sans", "string"}, {"verified", "boolean"}}
	edgeAttrs = []attrDef{{"type", "string"}, {"observed_at", "long"}, {"probe_id", "string"}, {"run_id", "string"}}
)

// attr is one attribute value, formatted.
type attr struct{ key, value string }

// attrsOf returns n's attributes: its type, and those of its record if the
// input held one. TXT records are joined by newlines, SANs by commas.
func attrsOf(n Node) []attr {
	a := []attr{{"type", n.Type}}
	i64 := strconv.FormatInt
	switch {
	case n.Domain != nil:
		d := n.Domain
		a = append(a, attr{"apex", string(d.Apex)}, attr{"first_seen", i64(d.FirstSeen, 10)}, attr{"last_seen", i64(d.LastSeen, 10)})
		if len(d.TXT) > 0 {
			a = append(a, attr{"txt", strings.Join(d.TXT, "\n")})
		}
	case n.IP != nil:
		a = append(a, attr{"first_seen", i64(n.IP.FirstSeen, 10)}, attr{"last_seen", i64(n.IP.LastSeen, 10)})
	case n.Cert != nil:
		c := n.Cert
		a = append(a, attr{"subject_cn", c.SubjectCN}, attr{"issuer_cn", c.IssuerCN},
			attr{"not_before", i64(c.NotBefore, 10)}, attr{"not_after", i64(c.NotAfter, 10)})
		if len(c.SANs) > 0 {
			a = append(a, attr{"sans", strings.Join(c.SANs, ",")})
		}
		a = append(a, attr{"verified", strconv.FormatBool(c.Verified)})
	}
	return a
}

// edgeAttrsOf returns e's attributes.
func edgeAttrsOf(e *spyder.Edge) []attr {
	return []attr{{"type", e.Type}, {"observed_at", strconv.FormatInt(e.ObservedAt, 10)},
		{"probe_id", e.ProbeID}, {"run_id", e.RunID}}
}
