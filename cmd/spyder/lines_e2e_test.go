package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/sink"
)

// TestE2E_FormatLinesKeepsEveryField crawls a simulated internet once with
// --format lines to --out and --ingest at the same time (the endpoint gets
// the batch objects): regrouped by batch_id, the lines give back exactly
// the batches the endpoint received, and those batches use every field of
// the schema (TXT records, certificate details, failed hosts' outcomes,
// what each resolver did, the IPs' networks), so
// none is dropped by the line format.
func TestE2E_FormatLinesKeepsEveryField(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 150, Seed: 23})
	var mu sync.Mutex
	var posted []spyder.Batch
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var b spyder.Batch
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &b); err != nil {
			t.Errorf("POST body is not a batch: %v", err)
		}
		mu.Lock()
		posted = append(posted, b)
		mu.Unlock()
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	out := filepath.Join(dir, "graph.jsonl")
	// A second resolver that answers SERVFAIL fills the dns step's
	// resolvers; an AS table fills the IP nodes' network fields.
	servfail := w.StartResolver(t, "127.0.0.1")
	servfail.SetMode(crawltest.DNSServFail)
	args := append([]string{"run", "--db", filepath.Join(dir, "spyder.db"), "--domains", mustDomains(t, w.Seeds),
		"--out", out, "--format", "lines", "--ingest", srv.URL}, worldArgs(t, w)...)
	args = append(args, "--resolver", servfail.Addr+","+w.Resolver, "--asn-db", writeASNTable(t, dir))
	p := startSpyder(t, args...)
	if err := p.wait(t, 90*time.Second); err != nil {
		t.Fatalf("spyder run: %v\n%s", err, p.log())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := sink.DecodeLines(f)
	if err != nil {
		t.Fatalf("DecodeLines(%s): %v", out, err)
	}
	byID := func(a, b spyder.Batch) int { return strings.Compare(a.BatchID, b.BatchID) }
	slices.SortFunc(got, byID)
	slices.SortFunc(posted, byID)
	if diff := cmp.Diff(posted, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("batches from --format lines differ from those POSTed (-posted +lines):\n%s", diff)
	}
	if unused := unusedFields(reflect.ValueOf(posted), "batch"); len(unused) > 0 {
		t.Errorf("the crawl never filled %v, so the round trip did not cover them", unused)
	}
	var failed int
	for _, b := range got {
		for _, pr := range b.Outcomes {
			if pr.Steps[len(pr.Steps)-1].Status != "ok" {
				failed++
			}
		}
	}
	if failed == 0 {
		t.Error("no failed host's outcome in the lines output")
	}
}

// unusedFields returns the struct fields under v (slices walked into) that
// are zero everywhere, named by their path. Verified is exempt: the world's
// CA is not handed to the process, so no certificate verifies. Of a
// resolver's counts, the answers and SERVFAILs are enough: the others are
// fields of the same struct, written and read by the same code. A batch's
// Hosts are never in a batch line (the hosts format writes them).
func unusedFields(v reflect.Value, path string) []string {
	used := map[string]bool{}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), path)
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				name := path + "." + v.Type().Field(i).Name
				if _, ok := used[name]; !ok {
					used[name] = false
				}
				if !v.Field(i).IsZero() {
					used[name] = true
				}
				walk(v.Field(i), name)
			}
		}
	}
	walk(v, path)
	var unused []string
	for name, ok := range used {
		if !ok && !strings.HasSuffix(name, ".Verified") && !resolverCount(name) && !strings.HasPrefix(name, "batch.Hosts") {
			unused = append(unused, name)
		}
	}
	slices.Sort(unused)
	return unused
}

// resolverCount tells the counts of a resolver's record other than
// Server, Answers and ServFail.
func resolverCount(name string) bool {
	i := strings.LastIndex(name, ".Resolvers.")
	if i < 0 {
		return false
	}
	f := name[i+len(".Resolvers."):]
	return f != "Server" && f != "Answers" && f != "ServFail"
}
