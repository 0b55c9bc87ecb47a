package sink_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/sink"
)

// fullBatch has every field of the schema set.
func fullBatch(id string) *spyder.Batch {
	return &spyder.Batch{
		ProbeID: "probe-1", RunID: "run-1", BatchID: id, Timestamp: 1705312200,
		NodesDomain: []spyder.DomainNode{{Host: "a.com", Apex: "a.com", FirstSeen: 1, LastSeen: 2, TXT: []string{"v=spf1 -all", "x"}}},
		NodesIP:     []spyder.IPNode{{IP: "192.0.2.1", FirstSeen: 3, LastSeen: 4}},
		NodesCert: []spyder.CertNode{{SPKISHA256: "ab12", SubjectCN: "a.com", IssuerCN: "R3", NotBefore: 5, NotAfter: 6,
			SANs: []string{"a.com", "www.a.com"}, Verified: true}},
		Edges: []spyder.Edge{{Type: spyder.ResolvesTo, Source: "a.com", Target: "192.0.2.1", ObservedAt: 7, ProbeID: "probe-0", RunID: "run-0"}},
		Outcomes: []spyder.HostOutcome{{Host: "gone.com", Steps: []spyder.StepOutcome{
			{Step: "dns", Status: "nxdomain", Detail: "no such host"}}}},
	}
}

// TestJSONSink_Lines_RoundTrip writes two batches in the lines format:
// each line is one object with a kind and the batch_id, and DecodeLines
// gives back both batches field for field.
func TestJSONSink_Lines_RoundTrip(t *testing.T) {
	var buf bytes.Buffer
	s, err := sink.NewJSONSink(&buf, sink.FormatLines)
	if err != nil {
		t.Fatal(err)
	}
	want := []spyder.Batch{*fullBatch("b1"), *fullBatch("b2")}
	want[1].Outcomes = nil
	for i := range want {
		if err := s.WriteBatch(t.Context(), &want[i]); err != nil {
			t.Fatal(err)
		}
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q is not one JSON object: %v", line, err)
		}
		kinds = append(kinds, m["kind"].(string)+"/"+m["batch_id"].(string))
	}
	wantKinds := []string{"batch/b1", "domain/b1", "ip/b1", "cert/b1", "edge/b1", "probe/b1",
		"batch/b2", "domain/b2", "ip/b2", "cert/b2", "edge/b2"}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("kinds of the lines (-want +got):\n%s", diff)
	}
	got, err := sink.DecodeLines(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DecodeLines after the lines format (-want +got):\n%s", diff)
	}
}

// TestDecodeLines_Errors names the line at fault.
func TestDecodeLines_Errors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"{\"kind\":\"batch\",\"batch_id\":\"b\"}\nnot json\n", "line 2:"},
		{"{\"kind\":\"edge\",\"batch_id\":\"b\"}\n", `line 1: edge line of batch "b" before its batch line`},
		{"{\"kind\":\"batch\",\"batch_id\":\"b\"}\n{\"kind\":\"star\",\"batch_id\":\"b\"}\n", `line 2: unknown kind "star"`},
	} {
		if _, err := sink.DecodeLines(strings.NewReader(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DecodeLines(%q) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
}
