// Package asn finds the autonomous system that announces an IP address, in
// a database file the user already has: a MaxMind DB of ASN records
// (GeoLite2-ASN and databases of its shape), or iptoasn.com's IP-to-ASN
// table (ip2asn-v4.tsv, ip2asn-v6.tsv, ip2asn-combined.tsv, plain or
// gzipped). The format is told by the file's content, not its name.
// Nothing is looked up over the network.
package asn

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"

	"github.com/oschwald/maxminddb-golang/v2"
)

// Info is what the database says of one address.
type Info struct {
	Number uint32       // AS number, never 0
	Org    string       // the AS's organisation or description
	Prefix netip.Prefix // the announced network holding the address
}

// Node is the graph name of the AS: "AS" and its number, e.g. "AS13335".
func (i Info) Node() string { return "AS" + strconv.FormatUint(uint64(i.Number), 10) }

// DB answers lookups from one database file; it is held in memory and safe
// for concurrent use.
type DB struct {
	mmdb  *maxminddb.Reader // a MaxMind DB, or
	table *table            // an IP-to-ASN table
}

// mmdbMarker starts the metadata section every MaxMind DB ends with.
var mmdbMarker = []byte("\xAB\xCD\xEFMaxMind.com")

// Open reads the database in path. Its errors are one line naming the file
// and what is wrong with it.
func Open(path string) (*DB, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("asn database %s: %w", path, unwrapPath(err))
	}
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		if data, err = gunzip(data); err != nil {
			return nil, fmt.Errorf("asn database %s: gzip: %v", path, err)
		}
	}
	if bytes.Contains(data, mmdbMarker) {
		r, err := openMMDB(data)
		if err != nil {
			return nil, fmt.Errorf("asn database %s: %v", path, err)
		}
		return &DB{mmdb: r}, nil
	}
	t, err := parseTable(data)
	if err != nil {
		return nil, fmt.Errorf("asn database %s: %v", path, err)
	}
	return &DB{table: t}, nil
}

// Lookup returns what the database says of a; false when it has no AS for
// a (not in any announced network, or "not routed": AS 0).
func (db *DB) Lookup(a netip.Addr) (Info, bool) {
	a = a.Unmap()
	if db.mmdb != nil {
		return lookupMMDB(db.mmdb, a)
	}
	return db.table.lookup(a)
}

func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
