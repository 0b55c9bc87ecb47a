package graph

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
)

// A sort record is a key, a 0 byte, a flag, an 8-byte sequence number and
// the item's fields:
//
//	node:  'n' type 1 id 0 flag seq fields (flag 0: the node's own record; 1: an edge's end, no fields)
//	edge:  'r' type 1 source 1 target 0 0 seq fields
//	probe: 's' host 0 0 seq steps
//
// The leading letters sort nodes before edges before probes, and the flag
// and the sequence number put a node's own record before the edge ends
// naming it and the first copy of anything before later ones, so the first
// record of each key is the one to visit. Keys never hold a 0 or 1 byte.
const (
	recNode  = 'n'
	recEdge  = 'r'
	recProbe = 's'
)

// key appends the key parts, separated by 1, then 0; false if a part
// holds a separator.
func key(b []byte, kind byte, parts ...string) ([]byte, bool) {
	b = append(b, kind)
	for i, p := range parts {
		if strings.ContainsAny(p, "\x00\x01") {
			return nil, false
		}
		if i > 0 {
			b = append(b, 1)
		}
		b = append(b, p...)
	}
	return append(b, 0), true
}

func appendSeq(b []byte, flag byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append(b, flag), seq)
}

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendStrs(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendStr(b, s)
	}
	return b
}

// nodeRecord appends n's record: with its fields when it has a record
// (seq then orders the copies), else as an edge's end. Nil if n's ID
// holds a separator.
func nodeRecord(b []byte, n Node, seq uint64) []byte {
	if n.ID == "" {
		return nil
	}
	b, ok := key(b, recNode, n.Type, n.ID)
	if !ok {
		return nil
	}
	switch {
	case n.Domain != nil:
		d := n.Domain
		b = appendStr(appendSeq(b, 0, seq), string(d.Apex))
		b = binary.AppendVarint(binary.AppendVarint(b, d.FirstSeen), d.LastSeen)
		return appendStrs(b, d.TXT)
	case n.IP != nil:
		ip := n.IP
		b = binary.AppendVarint(binary.AppendVarint(appendSeq(b, 0, seq), ip.FirstSeen), ip.LastSeen)
		b = binary.AppendUvarint(b, uint64(ip.ASN))
		return appendStr(appendStr(b, ip.ASOrg), ip.Prefix)
	case n.Cert != nil:
		c := n.Cert
		b = appendStr(appendStr(appendSeq(b, 0, seq), c.SubjectCN), c.IssuerCN)
		b = binary.AppendVarint(binary.AppendVarint(b, c.NotBefore), c.NotAfter)
		b = appendStrs(b, c.SANs)
		if c.Verified {
			return append(b, 1)
		}
		return append(b, 0)
	}
	return appendSeq(b, 1, 0)
}

// edgeRecord appends e's record.
func edgeRecord(b []byte, e *spyder.Edge, seq uint64) []byte {
	b, ok := key(b, recEdge, e.Type, e.Source, e.Target)
	if !ok {
		return nil
	}
	b = binary.AppendVarint(appendSeq(b, 0, seq), e.ObservedAt)
	return appendStr(appendStr(b, e.ProbeID), e.RunID)
}

// outcomeRecord appends the record of p, a host's outcome.
func outcomeRecord(b []byte, p *spyder.HostOutcome, seq uint64) []byte {
	b, ok := key(b, recProbe, string(p.Host))
	if !ok {
		return nil
	}
	b = binary.AppendUvarint(appendSeq(b, 0, seq), uint64(len(p.Steps)))
	for _, st := range p.Steps {
		b = appendStr(appendStr(appendStr(b, st.Step), st.Status), st.Detail)
		b = binary.AppendUvarint(b, uint64(len(st.Resolvers)))
		for _, c := range st.Resolvers {
			b = appendStr(b, c.Server)
			for _, n := range []uint64{c.Answers, c.Timeouts, c.Errors, c.ServFail, c.Refused, c.Truncated} {
				b = binary.AppendUvarint(b, n)
			}
		}
	}
	return b
}

// decodeSteps reads the steps of a probe record back.
func decodeSteps(f *fields) []spyder.StepOutcome {
	steps := make([]spyder.StepOutcome, min(f.uint(), uint64(len(f.b))))
	for i := range steps {
		st := &steps[i]
		st.Step, st.Status, st.Detail = f.str(), f.str(), f.str()
		if n := min(f.uint(), uint64(len(f.b))); n > 0 {
			st.Resolvers = make([]spyder.ResolverCounts, n)
			for j := range st.Resolvers {
				c := &st.Resolvers[j]
				c.Server = f.str()
				c.Answers, c.Timeouts, c.Errors, c.ServFail, c.Refused, c.Truncated = f.uint(), f.uint(), f.uint(), f.uint(), f.uint(), f.uint()
			}
		}
	}
	return steps
}

// recordKey is rec's key, its terminating 0 included.
func recordKey(rec []byte) []byte { return rec[:bytes.IndexByte(rec, 0)+1] }

// fields reads a record's fields back.
type fields struct {
	b   []byte
	err bool
}

func (f *fields) int() int64 {
	v, n := binary.Varint(f.b)
	f.take(n)
	return v
}

func (f *fields) uint() uint64 {
	v, n := binary.Uvarint(f.b)
	f.take(n)
	return v
}

func (f *fields) str() string {
	n := int(f.uint())
	if f.err || n > len(f.b) {
		f.err = true
		return ""
	}
	s := string(f.b[:n])
	f.b = f.b[n:]
	return s
}

func (f *fields) strs() []string {
	n := int(f.uint())
	if n == 0 || f.err || n > len(f.b) {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = f.str()
	}
	return out
}

func (f *fields) take(n int) {
	if n <= 0 {
		f.err = true
		return
	}
	f.b = f.b[n:]
}

// visitRecord decodes rec and passes it to v.
func visitRecord(v visitor, rec []byte) error {
	k := recordKey(rec)
	parts := strings.Split(string(k[1:len(k)-1]), "\x01")
	flag, body := rec[len(k)], &fields{b: rec[len(k)+9:]}
	switch k[0] {
	case recNode:
		n := Node{Type: parts[0], ID: parts[1]}
		if flag == 0 {
			decodeNode(&n, body)
		}
		if body.err {
			return fmt.Errorf("graph: a damaged temporary record of node %s", n.ID)
		}
		return v.node(n)
	case recEdge:
		e := spyder.Edge{Type: parts[0], Source: parts[1], Target: parts[2], ObservedAt: body.int()}
		e.ProbeID, e.RunID = body.str(), body.str()
		if body.err {
			return fmt.Errorf("graph: a damaged temporary record of edge %s → %s", e.Source, e.Target)
		}
		return v.edge(&e)
	}
	p := spyder.HostOutcome{Host: host.Name(parts[0]), Steps: decodeSteps(body)}
	if body.err {
		return fmt.Errorf("graph: a damaged temporary record of probe %s", p.Host)
	}
	return v.outcome(&p)
}

// decodeNode reads the fields of n's own record.
func decodeNode(n *Node, f *fields) {
	switch n.Type {
	case TypeDomain:
		d := &spyder.DomainNode{Host: host.Name(n.ID), Apex: host.Name(f.str())}
		d.FirstSeen, d.LastSeen = f.int(), f.int()
		d.TXT = f.strs()
		n.Domain = d
	case TypeIP:
		ip := &spyder.IPNode{IP: n.ID}
		ip.FirstSeen, ip.LastSeen = f.int(), f.int()
		ip.ASN = uint32(f.uint())
		ip.ASOrg, ip.Prefix = f.str(), f.str()
		n.IP = ip
	case TypeCert:
		c := &spyder.CertNode{SPKISHA256: n.ID, SubjectCN: f.str(), IssuerCN: f.str()}
		c.NotBefore, c.NotAfter = f.int(), f.int()
		c.SANs = f.strs()
		c.Verified = len(f.b) > 0 && f.b[0] == 1
		n.Cert = c
	}
}
