package asn

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"go4.org/netipx"
)

// table is an IP-to-ASN table: address ranges, sorted by start, each with
// its AS. Ranges of AS 0 ("Not routed") are left out.
type table struct {
	ranges []asRange
}

type asRange struct {
	start, end netip.Addr
	number     uint32
	org        string
}

// parseTable reads iptoasn.com's TSV format: one range a line, as
// range_start, range_end, AS_number, country_code, AS_description,
// separated by tabs. A line that is not of that form is an error naming
// its number; blank lines are skipped.
func parseTable(data []byte) (*table, error) {
	t := &table{}
	orgs := make(map[string]string) // one copy of each description
	for n, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, err := parseRange(string(line))
		if err != nil {
			if n == 0 {
				return nil, fmt.Errorf("neither a MaxMind DB nor an IP-to-ASN TSV table (line 1: %v)", err)
			}
			return nil, fmt.Errorf("line %d: %v", n+1, err)
		}
		if r.number == 0 {
			continue
		}
		if o, ok := orgs[r.org]; ok {
			r.org = o
		} else {
			orgs[r.org] = r.org
		}
		t.ranges = append(t.ranges, r)
	}
	if len(t.ranges) == 0 {
		return nil, fmt.Errorf("no announced range (an empty IP-to-ASN table?)")
	}
	slices.SortFunc(t.ranges, func(a, b asRange) int { return a.start.Compare(b.start) })
	return t, nil
}

func parseRange(line string) (asRange, error) {
	f := strings.Split(line, "\t")
	if len(f) < 5 {
		return asRange{}, fmt.Errorf("want 5 tab-separated fields (range_start range_end AS_number country_code AS_description), got %d", len(f))
	}
	start, err1 := netip.ParseAddr(f[0])
	end, err2 := netip.ParseAddr(f[1])
	if err1 != nil || err2 != nil || start.Is4() != end.Is4() || end.Less(start) {
		return asRange{}, fmt.Errorf("bad address range %q - %q", f[0], f[1])
	}
	number, err := strconv.ParseUint(strings.TrimPrefix(f[2], "AS"), 10, 32)
	if err != nil {
		return asRange{}, fmt.Errorf("bad AS number %q", f[2])
	}
	return asRange{start: start, end: end, number: uint32(number), org: f[4]}, nil
}

// lookup finds the range holding a; its Prefix is the largest CIDR block
// of that range that holds a (a range need not be one block).
func (t *table) lookup(a netip.Addr) (Info, bool) {
	i, found := slices.BinarySearchFunc(t.ranges, a, func(r asRange, a netip.Addr) int { return r.start.Compare(a) })
	if !found {
		i--
	}
	if i < 0 || t.ranges[i].end.Less(a) || t.ranges[i].start.Is4() != a.Is4() {
		return Info{}, false
	}
	r := t.ranges[i]
	info := Info{Number: r.number, Org: r.org}
	for _, p := range netipx.IPRangeFrom(r.start, r.end).Prefixes() {
		if p.Contains(a) {
			info.Prefix = p
			break
		}
	}
	return info, true
}
