package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/graph/graphtest"
	"github.com/spyder-crawler/spyder/internal/duckdbtest"
	"github.com/spyder-crawler/spyder/tables"
)

// recipes returns the SQL blocks of docs/parquet.md that start with
// "-- recipe: NAME", by name, with 'graph/' pointing at dir.
func recipes(t *testing.T, dir string) map[string]string {
	doc, err := os.ReadFile("../docs/parquet.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```sql\n-- recipe: (\\S+)\n(.*?)```").FindAllSubmatch(doc, -1) {
		out[string(m[1])] = strings.ReplaceAll(string(m[2]), "'graph/", "'"+dir+"/")
	}
	for _, name := range []string{"top", "outcomes", "edge-counts", "diff", "neighbourhood", "shared-ip"} {
		if out[name] == "" {
			t.Fatalf("docs/parquet.md has no recipe %q", name)
		}
	}
	return out
}

// synthRun writes a synthetic crawl of run to a file and exports it as
// Parquet into each of dirs.
func synthRun(t *testing.T, o graphtest.Options, dirs ...string) string {
	var b strings.Builder
	if err := graphtest.Write(&b, o); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), o.Run+".jsonl")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := ExportParquet(&Reader{}, []string{in}, d, tables.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	return in
}

// TestRecipes_AnswerAsTheGraphTools runs the DuckDB recipes of
// docs/parquet.md on Parquet exports of synthetic crawls, and checks their
// answers against graph summary, diff and view --host on the same crawls.
func TestRecipes_AnswerAsTheGraphTools(t *testing.T) {
	one, two := t.TempDir(), t.TempDir()
	old := synthRun(t, graphtest.Options{Hosts: 400, Run: "monday"}, one, two)
	new := synthRun(t, graphtest.Options{Hosts: 400, Start: 40, Run: "tuesday"}, two)
	r1, r2 := recipes(t, one), recipes(t, two)
	res := duckdbtest.Each(t, r1["top"], r1["outcomes"], r1["edge-counts"], r1["neighbourhood"], r2["diff"], r1["shared-ip"])

	s, err := Summarize(&Reader{}, []string{old}, 10)
	if err != nil {
		t.Fatal(err)
	}
	top := map[string][]Ranked{}
	for _, row := range res[0] {
		label, _ := row["label"].(string)
		top[row["type"].(string)] = append(top[row["type"].(string)], Ranked{ID: row["target"].(string), Hosts: int(duckdbtest.Int(t, row["hosts"])), Label: label})
	}
	for _, k := range TopKinds {
		if d := gocmp.Diff(s.Top[k.Key], top[k.EdgeType]); d != "" || len(top[k.EdgeType]) == 0 {
			t.Errorf("recipe top, %s (-summary +recipe):\n%s", k.EdgeType, d)
		}
	}
	check := func(name string, rows []map[string]any, k, v string, want map[string]int) {
		got := map[string]int{}
		for _, row := range rows {
			got[row[k].(string)] = int(duckdbtest.Int(t, row[v]))
		}
		if d := gocmp.Diff(want, got); d != "" {
			t.Errorf("recipe %s (-summary +recipe):\n%s", name, d)
		}
	}
	check("outcomes", res[1], "outcome", "hosts", s.Outcomes)
	check("edge-counts", res[2], "type", "edges", s.Edges)

	levels, _, err := neighbourhood(&Reader{}, []string{old}, ViewOptions{Host: graphtest.Host(3), Depth: 0, MaxNodes: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for k, l := range levels {
		if l == 1 {
			want = append(want, k[strings.IndexByte(k, 0)+1:])
		}
	}
	for _, row := range res[3] {
		got = append(got, row["neighbour"].(string))
	}
	slices.Sort(want)
	if d := gocmp.Diff(want, got); d != "" || len(got) < 3 {
		t.Errorf("recipe neighbourhood (-view +recipe):\n%s", d)
	}

	checkDiffRecipe(t, old, new, res[4])
	checkSharedIP(t, old, res[5])
}

// checkSharedIP compares the shared-ip recipe's rows with the hosts that
// resolve to an address of graphtest.Host(3), read from the JSON.
func checkSharedIP(t *testing.T, in string, rows []map[string]any) {
	byIP := map[string][]string{}
	err := (&Reader{}).Read([]string{in}, func(b *spyder.Batch) error {
		for _, e := range b.Edges {
			if e.Type == spyder.ResolvesTo {
				byIP[e.Target] = append(byIP[e.Target], e.Source)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for ip, hosts := range byIP {
		if slices.Contains(hosts, graphtest.Host(3)) {
			for _, h := range hosts {
				if h != graphtest.Host(3) {
					want = append(want, h+" "+ip)
				}
			}
		}
	}
	for _, row := range rows {
		got = append(got, row["host"].(string)+" "+row["ip"].(string))
	}
	slices.Sort(want)
	slices.Sort(got)
	if d := gocmp.Diff(slices.Compact(want), got); d != "" || len(got) == 0 {
		t.Errorf("recipe shared-ip (-JSON +recipe):\n%s", d)
	}
}

// checkDiffRecipe compares the diff recipe's rows with the edges graph
// diff reports between the runs.
func checkDiffRecipe(t *testing.T, old, new string, rows []map[string]any) {
	var buf bytes.Buffer
	both := []string{old, new}
	if _, err := Diff(&Reader{}, Side{Names: both, Run: "monday"}, Side{Names: both, Run: "tuesday"}, &buf); err != nil {
		t.Fatal(err)
	}
	var want, got []string
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var c Change
		if err := dec.Decode(&c); err != nil {
			t.Fatal(err)
		}
		if c.Kind == "edge" {
			want = append(want, fmt.Sprint(c.Change, " ", c.Type, " ", c.Source, " ", c.Target))
		}
	}
	for _, row := range rows {
		got = append(got, fmt.Sprint(row["change"], " ", row["type"], " ", row["source"], " ", row["target"]))
	}
	slices.Sort(want)
	slices.Sort(got)
	if d := gocmp.Diff(want, got); d != "" || len(got) == 0 {
		t.Errorf("recipe diff (-graph diff +recipe):\n%s", d)
	}
}
