// Package graphtest writes synthetic crawl output in spyder's real schema
// (spyder.Batch), shaped like a crawl: hosts share addresses, name servers,
// mail hosts and certificates, and link to each other. Tests and the
// performance figures of `spyder graph` read it.
package graphtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spyder-crawler/spyder/host"

	"github.com/spyder-crawler/spyder"
)

// Options shape a synthetic crawl.
type Options struct {
	Hosts     int    // probed hosts
	BatchSize int    // hosts per batch line (default 64)
	Edges     bool   // write the edges format (one edge per line) instead of batches
	Run       string // run_id (default "default")
	Start     int    // number of the first host, so two crawls can overlap
}

// Host returns the name of host i: h<i>.example<i/4>.com (four hosts per
// registrable domain).
func Host(i int) string { return fmt.Sprintf("h%d.example%d.com", i, i/4) }

// Write writes the crawl to w. Within it each node and edge appears once,
// as spyder guarantees within a run.
func Write(w io.Writer, o Options) error {
	if o.BatchSize <= 0 {
		o.BatchSize = 64
	}
	if o.Run == "" {
		o.Run = "default"
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	g := &gen{o: o, seen: map[string]bool{}}
	for first := o.Start; first < o.Start+o.Hosts; first += o.BatchSize {
		b := spyder.Batch{ProbeID: "synth", RunID: o.Run, BatchID: fmt.Sprintf("b%d", first), Timestamp: 1700000000}
		for i := first; i < first+o.BatchSize && i < o.Start+o.Hosts; i++ {
			g.host(&b, i)
		}
		if err := g.emit(enc, &b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

type gen struct {
	o    Options
	seen map[string]bool // shared nodes already written (IPs, NS, MX, certs): a small set
}

func (g *gen) once(key string) bool {
	if g.seen[key] {
		return false
	}
	g.seen[key] = true
	return true
}

// host adds host i's nodes, edges and probe outcome to b.
func (g *gen) host(b *spyder.Batch, i int) {
	h, apex := Host(i), fmt.Sprintf("example%d.com", i/4)
	const t = 1700000000
	txt := []string{"v=spf1 include:_spf.example.net -all"}
	if i%100 == 0 { // characters every format must escape, and some that are not ASCII
		txt = append(txt, `q="<a & b>" 'c' \ café ✓`)
	}
	b.NodesDomain = append(b.NodesDomain, spyder.DomainNode{Host: host.Name(h), Apex: host.Name(apex), FirstSeen: t, LastSeen: t, TXT: txt})
	edge := func(typ, target string) {
		b.Edges = append(b.Edges, spyder.Edge{Type: typ, Source: h, Target: target, ObservedAt: t, ProbeID: "synth", RunID: g.o.Run})
	}
	ip := fmt.Sprintf("10.%d.%d.%d", (i/3)>>16&255, (i/3)>>8&255, (i/3)&255) // three hosts an address
	if i%10 == 0 {
		ip = fmt.Sprintf("192.0.2.%d", i%7) // a few addresses shared by a tenth of the hosts
	}
	if g.once(ip) {
		b.NodesIP = append(b.NodesIP, spyder.IPNode{IP: ip, FirstSeen: t, LastSeen: t})
	}
	edge(spyder.ResolvesTo, ip)
	for _, ns := range []string{fmt.Sprintf("ns%d.dns%d.net", i%2, i%100), fmt.Sprintf("ns%d.dns%d.net", 2+i%2, i%100)} {
		if g.once(ns) {
			b.NodesDomain = append(b.NodesDomain, spyder.DomainNode{Host: host.Name(ns), Apex: host.Name(ns[4:]), FirstSeen: t, LastSeen: t})
		}
		edge(spyder.UsesNS, ns)
	}
	if i%2 == 0 {
		mx := fmt.Sprintf("mx.mail%d.org", i%500)
		if g.once(mx) {
			b.NodesDomain = append(b.NodesDomain, spyder.DomainNode{Host: host.Name(mx), Apex: host.Name(mx[3:]), FirstSeen: t, LastSeen: t})
		}
		edge(spyder.UsesMX, mx)
	}
	if i%5 != 4 { // one host in five has no certificate (its TLS step failed)
		spki := fmt.Sprintf("%064x", i/4)
		if g.once(spki) {
			b.NodesCert = append(b.NodesCert, spyder.CertNode{SPKISHA256: spki, SubjectCN: apex, IssuerCN: "Synthetic CA",
				NotBefore: t - 86400, NotAfter: t + 90*86400, SANs: []string{apex, "*." + apex}, Verified: i%3 != 0})
		}
		edge(spyder.UsesCert, spki)
		edge(spyder.LinksTo, Host((i*7919+13)%(g.o.Start+g.o.Hosts)))
		if i%4 == 0 {
			edge(spyder.LinksTo, Host(i%97)) // a few hosts every fourth host links to
		}
	}
	b.Outcomes = append(b.Outcomes, spyder.HostOutcome{Host: host.Name(h), Steps: g.steps(i)})
}

func (g *gen) steps(i int) []spyder.StepOutcome {
	st := func(step, status string) spyder.StepOutcome { return spyder.StepOutcome{Step: step, Status: status} }
	if i%5 == 4 {
		return []spyder.StepOutcome{st(spyder.StepDNS, "ok"), st(spyder.StepTLS, "tls_error"),
			st(spyder.StepRobots, "tls_error"), st(spyder.StepPage, "tls_error")}
	}
	page := "ok"
	if i%13 == 0 {
		page = "http_503"
	}
	return []spyder.StepOutcome{st(spyder.StepDNS, "ok"), st(spyder.StepTLS, "ok"), st(spyder.StepRobots, "ok"), st(spyder.StepPage, page)}
}

func (g *gen) emit(enc *json.Encoder, b *spyder.Batch) error {
	if !g.o.Edges {
		return enc.Encode(b)
	}
	for _, e := range b.Edges {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}
