package graph

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder"
)

// TestRead_LinesFormat: a file of the lines format reads as the batches
// its lines came from: each node, edge and outcome once, an item with
// its batch line's run and probe.
func TestRead_LinesFormat(t *testing.T) {
	lines := []string{
		jsonLine(t, map[string]any{"kind": "batch", "batch_id": "b1", "probe_id": "p", "run_id": "r1", "timestamp": 7}),
		jsonLine(t, map[string]any{"kind": "domain", "batch_id": "b1", "host": "a.example", "apex": "a.example", "txt": []string{"v=spf1"}}),
		jsonLine(t, map[string]any{"kind": "ip", "batch_id": "b1", "ip": "192.0.2.1"}),
		jsonLine(t, map[string]any{"kind": "edge", "batch_id": "b1", "type": spyder.ResolvesTo, "source": "a.example", "target": "192.0.2.1", "run_id": "r1"}),
		jsonLine(t, map[string]any{"kind": "probe", "batch_id": "b1", "host": "a.example", "steps": []any{map[string]any{"step": "dns", "status": "ok"}}}),
	}
	var got spyder.Batch
	var runs []string
	r := &Reader{}
	err := r.Read([]string{writeFile(t, "lines.jsonl", []byte(strings.Join(lines, "\n")+"\n"))}, func(b *spyder.Batch) error {
		runs = append(runs, b.RunID)
		got.NodesDomain = append(got.NodesDomain, b.NodesDomain...)
		got.NodesIP = append(got.NodesIP, b.NodesIP...)
		got.Edges = append(got.Edges, b.Edges...)
		got.Outcomes = append(got.Outcomes, b.Outcomes...)
		return nil
	})
	if err != nil || r.Problems.Valid != 5 || len(r.Problems.ByFile) != 0 {
		t.Fatalf("Read = %v, %d valid, problems %v; want nil, 5, none", err, r.Problems.Valid, r.Problems.ByFile)
	}
	want := spyder.Batch{
		NodesDomain: []spyder.DomainNode{{Host: "a.example", Apex: "a.example", TXT: []string{"v=spf1"}}},
		NodesIP:     []spyder.IPNode{{IP: "192.0.2.1"}},
		Edges:       []spyder.Edge{{Type: spyder.ResolvesTo, Source: "a.example", Target: "192.0.2.1", RunID: "r1"}},
		Outcomes:    []spyder.HostOutcome{{Host: "a.example", Steps: []spyder.StepOutcome{{Step: "dns", Status: "ok"}}}},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("lines read back (-want +got):\n%s", diff)
	}
	if gocmp.Diff([]string{"r1", "r1", "r1", "r1", "r1"}, runs) != "" {
		t.Errorf("runs of the records = %q, want r1 each (from the batch line)", runs)
	}
}

// TestRead_HostsFormat: a host record reads as a batch of its own: the
// host's node with its TXT records, the nodes and edges it holds, its
// outcome.
func TestRead_HostsFormat(t *testing.T) {
	res := &spyder.Result{
		Host: "a.example",
		Domains: []spyder.DomainNode{{Host: "a.example", Apex: "a.example", TXT: []string{"v=spf1"}},
			{Host: "ns.example", Apex: "ns.example"}},
		IPs:     []spyder.IPNode{{IP: "192.0.2.1"}},
		Edges:   []spyder.Edge{{Type: spyder.UsesNS, Source: "a.example", Target: "ns.example"}},
		Outcome: spyder.HostOutcome{Host: "a.example", Steps: []spyder.StepOutcome{{Step: "dns", Status: "nxdomain"}}},
	}
	rec := spyder.NewHostRecord(res, "p", "r1", 9)
	var got []spyder.Batch
	r := &Reader{}
	err := r.Read([]string{writeFile(t, "hosts.jsonl", []byte(jsonLine(t, rec)+"\n"))}, func(b *spyder.Batch) error {
		got = append(got, *b)
		return nil
	})
	if err != nil || len(got) != 1 {
		t.Fatalf("Read = %v, %d batches; want nil, 1", err, len(got))
	}
	want := spyder.Batch{ProbeID: "p", RunID: "r1", Timestamp: 9,
		NodesDomain: []spyder.DomainNode{{Host: "a.example", Apex: "a.example", FirstSeen: 9, LastSeen: 9, TXT: []string{"v=spf1"}},
			{Host: "ns.example", Apex: "ns.example"}},
		NodesIP: res.IPs, NodesCert: []spyder.CertNode{}, Edges: res.Edges, Outcomes: []spyder.HostOutcome{res.Outcome}}
	if diff := gocmp.Diff(want, got[0]); diff != "" {
		t.Errorf("host record read back (-want +got):\n%s", diff)
	}
	if rec.Outcome != "nxdomain" {
		t.Errorf("record outcome = %q, want nxdomain", rec.Outcome)
	}
}

// TestReader_CheckRefusesNonOutput: Check marks a file with lines but no
// record of any format as refused, with its first problem, and passes one
// whose first line is a record.
func TestReader_CheckRefusesNonOutput(t *testing.T) {
	list := writeFile(t, "list.txt", []byte("a.example\nb.example\n"))
	good := writeFile(t, "good.jsonl", []byte(jsonLine(t, spyder.Edge{Type: spyder.ResolvesTo, Source: "a", Target: "192.0.2.1"})+"\nnot json\n"))
	r := &Reader{}
	if err := r.Check([]string{good, list}); err != nil {
		t.Fatal(err)
	}
	if why := r.Problems.Refused[list]; !strings.HasPrefix(why, "line 1: not JSON") || len(r.Problems.Refused) != 1 {
		t.Errorf("Refused = %v, want only %s, line 1: not JSON", r.Problems.Refused, list)
	}
}
