package graph

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/graph/graphtest"
)

// model is the graph of a file as the tests see it: read whole, in memory,
// with encoding/json, independently of the package's streaming reader.
type model struct {
	nodes    map[string]map[string]bool // type → IDs
	edges    map[[3]string]spyder.Edge  // (type, source, target) → first edge
	domains  map[string]spyder.DomainNode
	certs    map[string]spyder.CertNode
	ips      map[string]spyder.IPNode
	outcomes map[string]string // host → page status
}

func (m *model) nodeCount() int {
	n := 0
	for _, ids := range m.nodes {
		n += len(ids)
	}
	return n
}

func loadModel(t testing.TB, paths ...string) *model {
	t.Helper()
	m := &model{nodes: map[string]map[string]bool{TypeDomain: {}, TypeIP: {}, TypeCert: {}},
		edges: map[[3]string]spyder.Edge{}, domains: map[string]spyder.DomainNode{},
		certs: map[string]spyder.CertNode{}, ips: map[string]spyder.IPNode{}, outcomes: map[string]string{}}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var b spyder.Batch
			var e spyder.Edge
			if json.Unmarshal(sc.Bytes(), &b) != nil || json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			if b.BatchID == "" && e.Type != "" {
				b.Edges = []spyder.Edge{e}
			}
			m.add(&b)
		}
	}
	return m
}

func (m *model) add(b *spyder.Batch) {
	for _, d := range b.NodesDomain {
		m.nodes[TypeDomain][string(d.Host)] = true
		if _, ok := m.domains[string(d.Host)]; !ok {
			m.domains[string(d.Host)] = d
		}
	}
	for _, ip := range b.NodesIP {
		m.nodes[TypeIP][ip.IP] = true
		if _, ok := m.ips[ip.IP]; !ok {
			m.ips[ip.IP] = ip
		}
	}
	for _, c := range b.NodesCert {
		m.nodes[TypeCert][c.SPKISHA256] = true
		if _, ok := m.certs[c.SPKISHA256]; !ok {
			m.certs[c.SPKISHA256] = c
		}
	}
	for _, e := range b.Edges {
		k := [3]string{e.Type, e.Source, e.Target}
		if _, ok := m.edges[k]; !ok {
			m.edges[k] = e
		}
		m.nodes[TypeDomain][e.Source] = true
		m.nodes[TargetType(e.Type)][e.Target] = true
	}
	for _, p := range b.Outcomes {
		for _, s := range p.Steps {
			if _, ok := m.outcomes[string(p.Host)]; !ok && s.Step == spyder.StepPage {
				m.outcomes[string(p.Host)] = s.Status
			}
		}
	}
}

func (m *model) edgeCounts() map[string]int {
	c := map[string]int{}
	for k := range m.edges {
		c[k[0]]++
	}
	return c
}

// synthFile writes a synthetic crawl into a temporary file.
func synthFile(t testing.TB, name string, o graphtest.Options) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := graphtest.Write(f, o); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}
