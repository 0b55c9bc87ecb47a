package asn

import (
	"bytes"
	"compress/gzip"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// writeMMDB writes a MaxMind DB of type dbType with a real writer, one
// GeoLite2-ASN-shaped record per network.
func writeMMDB(t *testing.T, dbType string, nets map[string]Info) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: dbType, RecordSize: 24, IncludeReservedNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	for cidr, info := range nets {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		rec := mmdbtype.Map{
			"autonomous_system_number":       mmdbtype.Uint32(info.Number),
			"autonomous_system_organization": mmdbtype.String(info.Org),
		}
		if err := tree.Insert(n, rec); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "asn.mmdb", buf.Bytes())
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ip2asn is a table in iptoasn.com's combined format, v4 and v6 ranges,
// with a "Not routed" range and a range that is not one CIDR block.
const ip2asn = "1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET\n" +
	"1.0.1.0\t1.0.3.255\t0\tNone\tNot routed\n" +
	"8.8.8.0\t8.8.9.255\t15169\tUS\tGOOGLE\r\n" +
	"198.51.100.0\t198.51.100.191\t64500\tZZ\tDocumentation, Example Org\n" +
	"2001:db8::\t2001:db8::ffff\t64501\tZZ\tSIX-EXAMPLE\n"

type lookupCase struct {
	ip     string
	ok     bool
	number uint32
	org    string
	prefix string
}

func checkLookups(t *testing.T, db *DB, cases []lookupCase) {
	t.Helper()
	for _, c := range cases {
		got, ok := db.Lookup(netip.MustParseAddr(c.ip))
		want := Info{}
		if c.ok {
			want = Info{Number: c.number, Org: c.org, Prefix: netip.MustParsePrefix(c.prefix)}
		}
		if ok != c.ok || got != want {
			t.Errorf("Lookup(%s) = %+v, %v; want %+v, %v", c.ip, got, ok, want, c.ok)
		}
	}
}

func TestTable(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(ip2asn))
	zw.Close()
	for name, data := range map[string][]byte{"ip2asn-combined.tsv": []byte(ip2asn), "ip2asn-combined.tsv.gz": gz.Bytes()} {
		t.Run(name, func(t *testing.T) {
			db, err := Open(writeFile(t, name, data))
			if err != nil {
				t.Fatal(err)
			}
			checkLookups(t, db, []lookupCase{
				{"1.0.0.1", true, 13335, "CLOUDFLARENET", "1.0.0.0/24"},
				{"1.0.2.1", false, 0, "", ""}, // not routed
				{"8.8.8.8", true, 15169, "GOOGLE", "8.8.8.0/23"},
				{"8.8.10.1", false, 0, "", ""},
				{"198.51.100.130", true, 64500, "Documentation, Example Org", "198.51.100.128/26"},
				{"198.51.100.7", true, 64500, "Documentation, Example Org", "198.51.100.0/25"},
				{"::ffff:1.0.0.9", true, 13335, "CLOUDFLARENET", "1.0.0.0/24"},
				{"2001:db8::42", true, 64501, "SIX-EXAMPLE", "2001:db8::/112"},
				{"2001:db8::1:0", false, 0, "", ""},
				{"0.0.0.1", false, 0, "", ""},
			})
		})
	}
}

func TestMaxMind(t *testing.T) {
	path := writeMMDB(t, "GeoLite2-ASN", map[string]Info{
		"1.0.0.0/24":      {Number: 13335, Org: "CLOUDFLARENET"},
		"8.8.8.0/23":      {Number: 15169, Org: "GOOGLE"},
		"2001:db8::/32":   {Number: 64501, Org: "SIX-EXAMPLE"},
		"198.51.100.0/24": {Number: 0, Org: ""},
	})
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	checkLookups(t, db, []lookupCase{
		{"1.0.0.1", true, 13335, "CLOUDFLARENET", "1.0.0.0/24"},
		{"8.8.9.9", true, 15169, "GOOGLE", "8.8.8.0/23"},
		{"2001:db8:1::5", true, 64501, "SIX-EXAMPLE", "2001:db8::/32"},
		{"9.9.9.9", false, 0, "", ""},
		{"198.51.100.1", false, 0, "", ""}, // AS 0
	})
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	city := writeMMDB(t, "GeoLite2-City", map[string]Info{"1.0.0.0/24": {Number: 1, Org: "x"}})
	for _, c := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "none.tsv"), "asn database " + filepath.Join(dir, "none.tsv") + ": no such file or directory"},
		{"directory", dir, "asn database " + dir + ": is a directory"},
		{"not a table", writeFile(t, "x.txt", []byte("hello world\n")),
			": neither a MaxMind DB nor an IP-to-ASN TSV table (line 1: want 5 tab-separated fields"},
		{"bad line", writeFile(t, "bad.tsv", []byte("1.0.0.0\t1.0.0.255\t13335\tUS\tX\n1.0.1.0\tnope\t5\tUS\tY\n")),
			": line 2: bad address range \"1.0.1.0\" - \"nope\""},
		{"bad AS", writeFile(t, "badas.tsv", []byte("1.0.0.0\t1.0.0.255\tx13335\tUS\tX\n")), `bad AS number "x13335"`},
		{"empty", writeFile(t, "empty.tsv", nil), "no announced range"},
		{"city database", city, `a MaxMind DB of type "GeoLite2-City", not of ASN records`},
		{"truncated MaxMind DB", truncatedMMDB(t), "not a readable MaxMind DB"},
		{"bad gzip", writeFile(t, "x.gz", []byte{0x1f, 0x8b, 0, 1, 2}), ": gzip: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.path)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Open(%s) = %v; want one line containing %q", c.path, err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "asn database "+c.path+": ") {
				t.Fatalf("error %q does not name the file", err)
			}
		})
	}
}

// truncatedMMDB is a real MaxMind DB with its search tree cut off.
func truncatedMMDB(t *testing.T) string {
	data, err := os.ReadFile(writeMMDB(t, "GeoLite2-ASN", map[string]Info{"1.0.0.0/24": {Number: 1, Org: "x"}}))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, mmdbMarker)
	return writeFile(t, "cut.mmdb", data[i-4:])
}
