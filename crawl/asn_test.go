package crawl_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/asn"
	"github.com/spyder-crawler/spyder/crawl"
)

// With an ASN database, each IP node carries its AS, organisation and
// prefix and has an IN_AS edge to "AS<number>"; an address the database
// does not cover has neither.
func TestCrawler_ASN(t *testing.T) {
	f := mustFixture(t, fixtureRecords, fixtureCertNames, fixtureHandler())
	path := filepath.Join(t.TempDir(), "ip2asn-combined.tsv")
	table := "192.0.2.0\t192.0.2.127\t64496\tZZ\tEXAMPLE-NET\n" +
		"2001:db8::\t2001:db8::ffff\t0\tNone\tNot routed\n"
	if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := asn.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r := mustCrawler(t, f, func(c *crawl.Config) { c.ASN = db }).Visit(t.Context(), "a.example.com")
	wantIPs := []spyder.IPNode{
		{IP: "192.0.2.1", FirstSeen: 1700000000, LastSeen: 1700000000, ASN: 64496, ASOrg: "EXAMPLE-NET", Prefix: "192.0.2.0/25"},
		{IP: "2001:db8::1", FirstSeen: 1700000000, LastSeen: 1700000000},
	}
	if diff := cmp.Diff(wantIPs, r.IPs); diff != "" {
		t.Errorf("IP nodes (-want +got):\n%s", diff)
	}
	var inAS []edge
	for _, e := range r.Edges {
		if e.Type == spyder.InAS {
			inAS = append(inAS, edge{e.Type, e.Source, e.Target})
		}
	}
	if diff := cmp.Diff([]edge{{"IN_AS", "192.0.2.1", "AS64496"}}, inAS); diff != "" {
		t.Errorf("IN_AS edges (-want +got):\n%s", diff)
	}
	for _, d := range r.Domains {
		if d.Host == "AS64496" {
			t.Errorf("the AS became a domain node: %+v", d)
		}
	}
}
