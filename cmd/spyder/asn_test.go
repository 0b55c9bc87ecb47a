package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
)

// TestE2E_ASNDatabase crawls the simulated internet with --asn-db naming an
// iptoasn.com table that covers two of the world's three address blocks:
// every IP node in them carries asn, as_org and prefix and has one IN_AS
// edge, the others have neither, and every other edge is as expected.
func TestE2E_ASNDatabase(t *testing.T) {
	w := crawltest.Start(t, crawltest.Options{Hosts: 60, Seed: 7})
	dir := t.TempDir()
	table := writeASNTable(t, dir)
	out := filepath.Join(dir, "graph.jsonl")
	args := append([]string{"run", "--db", filepath.Join(dir, "spyder.db"), "--domains", mustDomains(t, w.Seeds),
		"--out", out, "--asn-db", table}, worldArgs(t, w)...)
	if err := startSpyder(t, args...).wait(t, 90*time.Second); err != nil {
		t.Fatalf("spyder run: %v", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	wantAS := map[string]spyder.IPNode{
		"192.0.2.0/24":    {ASN: 64496, ASOrg: "TEST-NET-1 Org", Prefix: "192.0.2.0/24"},
		"198.51.100.0/24": {ASN: 64497, ASOrg: "TEST-NET-2 Org", Prefix: "198.51.100.0/24"},
	}
	inAS := map[string]string{}
	var ips []spyder.IPNode
	var edges []spyder.Edge
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var b spyder.Batch
		if err := json.Unmarshal(line, &b); err != nil {
			t.Fatal(err)
		}
		ips = append(ips, b.NodesIP...)
		for _, e := range b.Edges {
			if e.Type == spyder.InAS {
				inAS[e.Source] = e.Target
			} else {
				edges = append(edges, e)
			}
		}
	}
	checkEdges(t, w, edges)
	covered := 0
	for _, n := range ips {
		var want spyder.IPNode
		for block, as := range wantAS {
			if netip.MustParsePrefix(block).Contains(netip.MustParseAddr(n.IP)) {
				want, covered = as, covered+1
			}
		}
		if n.ASN != want.ASN || n.ASOrg != want.ASOrg || n.Prefix != want.Prefix {
			t.Errorf("IP node %+v, want asn %d as_org %q prefix %q", n, want.ASN, want.ASOrg, want.Prefix)
		}
		if wantEdge := map[bool]string{true: "AS" + strconv.FormatUint(uint64(want.ASN), 10), false: ""}[want.ASN != 0]; inAS[n.IP] != wantEdge {
			t.Errorf("IN_AS of %s = %q, want %q", n.IP, inAS[n.IP], wantEdge)
		}
	}
	if covered == 0 || covered == len(ips) {
		t.Fatalf("%d of %d IP nodes covered by the table; want some but not all", covered, len(ips))
	}
}

// A bad --asn-db stops spyder run before it crawls, with one line naming
// the file and the fault.
func TestRunBadASNDatabase(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "asn.tsv")
	if err := os.WriteFile(bad, []byte("1.0.0.0\t1.0.0.255\t13335\tUS\tX\nnot a range\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		bad:                           "spyder: --asn-db: asn database " + bad + ": line 2: want 5 tab-separated fields",
		filepath.Join(dir, "missing"): "spyder: --asn-db: asn database " + filepath.Join(dir, "missing") + ": no such file or directory",
	} {
		var stderr bytes.Buffer
		cmd := exec.Command(mustBinary(t), "run", "--db", filepath.Join(dir, "spyder.db"), "--asn-db", path)
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("spyder run --asn-db %s: %v, want a failing exit", path, err)
		}
		if got := stderr.String(); !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
			t.Errorf("stderr = %q, want one line starting %q", got, want)
		}
	}
}

// writeASNTable writes, in dir, an iptoasn.com table that covers two of
// the simulated world's three address blocks, and returns its path.
func writeASNTable(tb testing.TB, dir string) string {
	tb.Helper()
	table := filepath.Join(dir, "ip2asn-v4.tsv")
	tsv := "192.0.2.0\t192.0.2.255\t64496\tZZ\tTEST-NET-1 Org\n198.51.100.0\t198.51.100.255\t64497\tZZ\tTEST-NET-2 Org\n"
	if err := os.WriteFile(table, []byte(tsv), 0o644); err != nil {
		tb.Fatal(err)
	}
	return table
}
