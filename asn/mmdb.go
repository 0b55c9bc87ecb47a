package asn

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/oschwald/maxminddb-golang/v2"
)

// mmdbRecord is the record of a GeoLite2-ASN database.
type mmdbRecord struct {
	Number uint32 `maxminddb:"autonomous_system_number"`
	Org    string `maxminddb:"autonomous_system_organization"`
}

// openMMDB opens a MaxMind DB held in data and checks that it holds ASN
// records: its type names ASN (GeoLite2-ASN, GeoIP2-ISP, DBIP-ASN-Lite
// ...), so that a City or Country database is refused rather than giving
// every address no AS.
func openMMDB(data []byte) (*maxminddb.Reader, error) {
	r, err := maxminddb.OpenBytes(data)
	if err != nil {
		return nil, fmt.Errorf("not a readable MaxMind DB: %v", err)
	}
	t := r.Metadata.DatabaseType
	if !strings.Contains(strings.ToUpper(t), "ASN") && !strings.Contains(strings.ToUpper(t), "ISP") {
		return nil, fmt.Errorf("a MaxMind DB of type %q, not of ASN records (want GeoLite2-ASN or the like)", t)
	}
	return r, nil
}

func lookupMMDB(r *maxminddb.Reader, a netip.Addr) (Info, bool) {
	res := r.Lookup(a)
	var rec mmdbRecord
	if !res.Found() || res.Decode(&rec) != nil || rec.Number == 0 {
		return Info{}, false
	}
	return Info{Number: rec.Number, Org: rec.Org, Prefix: res.Prefix()}, true
}
