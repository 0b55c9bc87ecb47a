package graph

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/graph/graphtest"
)

// exportTo exports the files in format to a temporary file.
func exportTo(t *testing.T, format string, names ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "graph."+format)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := Export(&Reader{}, names, format, f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// networkxRead loads path with networkx's read_<format> and returns every
// node's and edge's attributes as JSON values (numbers as float64).
const networkxRead = `
import json, sys, networkx as nx
path, fmt = sys.argv[1], sys.argv[2]
g = nx.read_graphml(path, force_multigraph=True) if fmt == "graphml" else nx.read_gexf(path)
drop = {"label", "id"}
nodes = {n: {k: v for k, v in d.items() if k not in drop} for n, d in g.nodes(data=True)}
edges = [[u, v, {k: x for k, x in d.items() if k not in drop}] for u, v, d in g.edges(data=True)]
json.dump({"directed": g.is_directed(), "nodes": nodes, "edges": edges}, sys.stdout)
`

type nxGraph struct {
	Directed bool                      `json:"directed"`
	Nodes    map[string]map[string]any `json:"nodes"`
	Edges    [][3]any                  `json:"edges"`
}

func readWithNetworkX(t *testing.T, path, format string) nxGraph {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import networkx").Run(); err != nil {
		t.Fatalf("%s cannot import networkx (make deps installs python3-networkx): %v", py, err)
	}
	out, err := exec.Command(py, "-c", networkxRead, path, format).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("networkx read_%s: %v\n%s", format, err, stderr)
	}
	var g nxGraph
	if err := json.Unmarshal(out, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// wantNodeAttrs is what a reader of the export should find on each node,
// typed as JSON gives it.
func wantNodeAttrs(m *model) map[string]map[string]any {
	want := map[string]map[string]any{}
	for typ, ids := range m.nodes {
		for id := range ids {
			want[id] = map[string]any{"type": typ}
		}
	}
	for id, d := range m.domains {
		a := want[id]
		a["apex"], a["first_seen"], a["last_seen"] = string(d.Apex), float64(d.FirstSeen), float64(d.LastSeen)
		if len(d.TXT) > 0 {
			a["txt"] = strings.Join(d.TXT, "\n")
		}
	}
	for id, ip := range m.ips {
		want[id]["first_seen"], want[id]["last_seen"] = float64(ip.FirstSeen), float64(ip.LastSeen)
	}
	for id, c := range m.certs {
		a := want[id]
		a["subject_cn"], a["issuer_cn"], a["verified"] = c.SubjectCN, c.IssuerCN, c.Verified
		a["not_before"], a["not_after"], a["sans"] = float64(c.NotBefore), float64(c.NotAfter), strings.Join(c.SANs, ",")
	}
	return want
}

func wantEdges(m *model) map[string]int {
	want := map[string]int{}
	for k, e := range m.edges {
		want[k[1]+" "+k[2]+" "+k[0]+" "+strconv.FormatInt(e.ObservedAt, 10)+" "+e.ProbeID+" "+e.RunID]++
	}
	return want
}

// GraphML and GEXF load in NetworkX with every node, edge and attribute
// the input holds, from a batch file and an overlapping edges file.
func TestExport_GraphMLAndGEXFLoadInNetworkX(t *testing.T) {
	batch := synthFile(t, "batch.jsonl", graphtest.Options{Hosts: 1500})
	edges := synthFile(t, "edges.jsonl", graphtest.Options{Hosts: 600, Start: 1200, Edges: true, Run: "second"})
	m := loadModel(t, batch, edges)
	for _, format := range []string{"graphml", "gexf"} {
		t.Run(format, func(t *testing.T) {
			g := readWithNetworkX(t, exportTo(t, format, batch, edges), format)
			if !g.Directed {
				t.Error("graph is not directed")
			}
			if len(g.Nodes) != m.nodeCount() || len(g.Edges) != len(m.edges) {
				t.Errorf("networkx read %d nodes, %d edges; the input holds %d and %d", len(g.Nodes), len(g.Edges), m.nodeCount(), len(m.edges))
			}
			if d := gocmp.Diff(wantNodeAttrs(m), g.Nodes); d != "" {
				t.Errorf("node attributes (-want +got):\n%.3000s", d)
			}
			got := map[string]int{}
			for _, e := range g.Edges {
				a := e[2].(map[string]any)
				got[e[0].(string)+" "+e[1].(string)+" "+a["type"].(string)+" "+
					strconv.FormatFloat(a["observed_at"].(float64), 'f', -1, 64)+" "+a["probe_id"].(string)+" "+a["run_id"].(string)]++
			}
			if d := gocmp.Diff(wantEdges(m), got); d != "" {
				t.Errorf("edges (-want +got):\n%.3000s", d)
			}
		})
	}
}

// DOT is read back by Graphviz's own parser (gvpr), with the same nodes,
// node types and edges.
func TestExport_DOTParsesWithGraphviz(t *testing.T) {
	gvpr, err := exec.LookPath("gvpr")
	if err != nil {
		t.Fatal("gvpr (graphviz) is not installed; make deps installs it")
	}
	batch := synthFile(t, "batch.jsonl", graphtest.Options{Hosts: 800})
	m := loadModel(t, batch)
	dot := exportTo(t, "dot", batch)
	prog := `N{printf("N\t%s\t%s\t%s\n", $.name, $.type, $.apex)} E{printf("E\t%s\t%s\t%s\t%s\n", $.tail.name, $.head.name, $.type, $.run_id)}`
	out, err := exec.Command(gvpr, prog, dot).Output()
	if err != nil {
		t.Fatalf("gvpr: %v", err)
	}
	gotNodes, gotEdges := map[string]string{}, map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		f := strings.Split(line, "\t")
		if f[0] == "N" {
			gotNodes[f[1]] = f[2] + " " + f[3]
		} else {
			gotEdges[f[1]+" "+f[2]+" "+f[3]+" "+f[4]]++
		}
	}
	wantNodes, wantE := map[string]string{}, map[string]int{}
	for typ, ids := range m.nodes {
		for id := range ids {
			wantNodes[id] = typ + " " + string(m.domains[id].Apex)
		}
	}
	for k, e := range m.edges {
		wantE[k[1]+" "+k[2]+" "+k[0]+" "+e.RunID]++
	}
	if d := gocmp.Diff(wantNodes, gotNodes); d != "" {
		t.Errorf("nodes (-want +got):\n%.3000s", d)
	}
	if d := gocmp.Diff(wantE, gotEdges); d != "" {
		t.Errorf("edges (-want +got):\n%.3000s", d)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// The CSV edge list parses with encoding/csv and holds each edge once,
// with the type of each end.
func TestExport_CSV(t *testing.T) {
	batch := synthFile(t, "batch.jsonl", graphtest.Options{Hosts: 800})
	m := loadModel(t, batch)
	rows := readCSV(t, exportTo(t, "csv", batch))
	if d := gocmp.Diff(CSVHeader, rows[0]); d != "" {
		t.Fatalf("header (-want +got):\n%s", d)
	}
	got := map[string]int{}
	for _, r := range rows[1:] {
		got[strings.Join(r[:5], " ")]++
	}
	want := map[string]int{}
	for k := range m.edges {
		want[k[1]+" domain "+k[2]+" "+TargetType(k[0])+" "+k[0]]++
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("edges (-want +got):\n%.3000s", d)
	}
}

// The Neo4j files have the importer's headers, each node once in the file
// of its type, and every relationship's ends among the nodes of its ID
// space; the printed command names every file.
func TestExportNeo4j(t *testing.T) {
	batch := synthFile(t, "batch.jsonl", graphtest.Options{Hosts: 800})
	edges := synthFile(t, "edges.jsonl", graphtest.Options{Hosts: 100, Start: 2000, Edges: true})
	m := loadModel(t, batch, edges)
	dir := filepath.Join(t.TempDir(), "neo 4j")
	cmd, err := ExportNeo4j(&Reader{}, []string{batch, edges}, dir, "spyder")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]map[string]bool{}
	rels := 0
	for _, nf := range Neo4jFiles {
		rows := readCSV(t, filepath.Join(dir, nf.Name))
		if d := gocmp.Diff(nf.Header, rows[0]); d != "" {
			t.Errorf("%s header (-want +got):\n%s", nf.Name, d)
		}
		if !strings.Contains(cmd, "'"+filepath.Join(dir, nf.Name)+"'") {
			t.Errorf("command %q does not name %s", cmd, nf.Name)
		}
		space := strings.TrimSuffix(strings.SplitN(rows[0][0], "(", 2)[1], ")")
		if strings.HasPrefix(nf.Name, "rels_") {
			end := strings.TrimSuffix(strings.SplitN(rows[0][1], "(", 2)[1], ")")
			for _, r := range rows[1:] {
				rels++
				if !ids[space][r[0]] || !ids[end][r[1]] {
					t.Fatalf("%s: relationship %v has an end that is not a node", nf.Name, r)
				}
			}
			continue
		}
		ids[space] = map[string]bool{}
		for _, r := range rows[1:] {
			if ids[space][r[0]] {
				t.Errorf("%s: node %s twice", nf.Name, r[0])
			}
			ids[space][r[0]] = true
			if r[1] != space {
				t.Errorf("%s: label %q, want %q", nf.Name, r[1], space)
			}
		}
	}
	if len(ids["Domain"]) != len(m.nodes[TypeDomain]) || len(ids["IP"]) != len(m.nodes[TypeIP]) ||
		len(ids["Certificate"]) != len(m.nodes[TypeCert]) || rels != len(m.edges) {
		t.Errorf("neo4j: %d domains, %d IPs, %d certs, %d relationships; want %d, %d, %d, %d", len(ids["Domain"]),
			len(ids["IP"]), len(ids["Certificate"]), rels, len(m.nodes[TypeDomain]), len(m.nodes[TypeIP]), len(m.nodes[TypeCert]), len(m.edges))
	}
	if !strings.HasPrefix(cmd, "neo4j-admin database import full ") || !strings.HasSuffix(cmd, " spyder") {
		t.Errorf("command = %q", cmd)
	}
	var buf bytes.Buffer
	if err := Export(&Reader{}, []string{batch}, "neo4j", &buf); err == nil {
		t.Error("Export accepted neo4j, which writes a directory")
	}
}

// An IN_AS edge (a crawl with --asn-db) starts at an IP and ends at an AS:
// the CSV types its ends so, the Neo4j files put the AS in ases.csv and the
// edge in rels_as.csv, and the IP is never mistaken for a domain.
func TestExport_InAS(t *testing.T) {
	b := spyder.Batch{BatchID: "b1",
		NodesDomain: []spyder.DomainNode{{Host: "a.example", Apex: "a.example"}},
		NodesIP:     []spyder.IPNode{{IP: "192.0.2.1", ASN: 64496, ASOrg: "TEST", Prefix: "192.0.2.0/24"}},
		Edges: []spyder.Edge{{Type: spyder.ResolvesTo, Source: "a.example", Target: "192.0.2.1"},
			{Type: spyder.InAS, Source: "192.0.2.1", Target: "AS64496"}}}
	in := filepath.Join(t.TempDir(), "batch.jsonl")
	if err := os.WriteFile(in, []byte(jsonLine(t, b)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, exportTo(t, "csv", in))
	var got []string
	for _, r := range rows[1:] {
		got = append(got, strings.Join(r[:5], " "))
	}
	// Edges come sorted by type, source and target.
	if want := []string{"192.0.2.1 ip AS64496 as IN_AS", "a.example domain 192.0.2.1 ip RESOLVES_TO"}; !slices.Equal(got, want) {
		t.Errorf("csv rows %q, want %q", got, want)
	}
	dir := t.TempDir()
	if _, err := ExportNeo4j(&Reader{}, []string{in}, dir, "neo4j"); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][][]string{
		"domains.csv": {{"a.example", "Domain", "a.example", "0", "0", ""}},
		"ases.csv":    {{"AS64496", "AS"}},
		"rels_as.csv": {{"192.0.2.1", "AS64496", spyder.InAS, "0", "", ""}},
	} {
		if d := gocmp.Diff(want, readCSV(t, filepath.Join(dir, file))[1:]); d != "" {
			t.Errorf("%s (-want +got):\n%s", file, d)
		}
	}
}
