package bolttest

import (
	"encoding/binary"
	"os"
	"testing"
)

var ne = binary.NativeEndian

// Elem is one element of a page: its page ID and index.
type Elem struct {
	Page  uint64
	Index int
}

// Layout is where the records of an undamaged bbolt file lie, read from
// its pages' headers and elements without bbolt (which does not tell).
type Layout struct {
	PageSize int
	Size     int64
	Metas    [2]Meta
	Newest   int                 // the meta page in use
	Flags    map[uint64]uint16   // each tree page's type flags
	Overflow map[uint64]uint32   // each tree page's overflow pages
	Bucket   map[uint64]string   // each tree page's bucket path ("" for the top level)
	Children map[uint64][]uint64 // each branch page's children, in order
	Leaves   map[string][]uint64 // each bucket's leaf pages, in key order
	// Through lists, for each record (by RecordKey), the pages it is
	// reached through from the root; At is its element, for records on a
	// leaf page of their own bucket.
	Through map[string][]uint64
	At      map[string]Elem
}

// Meta is what a test needs of a meta page.
type Meta struct{ Root, Freelist, HWM, Txid uint64 }

// MustLayout maps the pages of the undamaged bbolt file at path.
func MustLayout(tb testing.TB, path string) *Layout {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	ps := int(ne.Uint32(data[16+8:]))
	l := &Layout{PageSize: ps, Size: int64(len(data)),
		Flags: map[uint64]uint16{}, Overflow: map[uint64]uint32{}, Bucket: map[uint64]string{},
		Children: map[uint64][]uint64{}, Leaves: map[string][]uint64{},
		Through: map[string][]uint64{}, At: map[string]Elem{}}
	for i := range l.Metas {
		m := data[i*ps+16:]
		l.Metas[i] = Meta{Root: ne.Uint64(m[16:]), Freelist: ne.Uint64(m[32:]), HWM: ne.Uint64(m[40:]), Txid: ne.Uint64(m[48:])}
	}
	if l.Metas[1].Txid > l.Metas[0].Txid {
		l.Newest = 1
	}
	l.walk(data, "", l.Metas[l.Newest].Root, nil)
	return l
}

// Meta returns the meta page in use.
func (l *Layout) Meta() Meta { return l.Metas[l.Newest] }

// walk maps the subtree at page id of the bucket at path.
func (l *Layout) walk(data []byte, path string, id uint64, through []uint64) {
	p := data[int(id)*l.PageSize:]
	flags, count, overflow := ne.Uint16(p[8:]), int(ne.Uint16(p[10:])), ne.Uint32(p[12:])
	l.Flags[id], l.Overflow[id], l.Bucket[id] = flags, overflow, path
	through = append(through[:len(through):len(through)], id)
	if flags == 0x01 {
		for i := range count {
			child := ne.Uint64(p[16+i*16+8:])
			l.Children[id] = append(l.Children[id], child)
			l.walk(data, path, child, through)
		}
		return
	}
	l.Leaves[path] = append(l.Leaves[path], id)
	l.leaf(data, path, p, id, through, true)
}

// leaf maps the elements of leaf page p, page id or inline in it.
func (l *Layout) leaf(data []byte, path string, p []byte, id uint64, through []uint64, own bool) {
	for i := range int(ne.Uint16(p[10:])) {
		e := p[16+i*16:]
		flags, pos, ksize, vsize := ne.Uint32(e), int(ne.Uint32(e[4:])), int(ne.Uint32(e[8:])), int(ne.Uint32(e[12:]))
		k := e[pos : pos+ksize]
		v := e[pos+ksize : pos+ksize+vsize]
		if flags&1 == 0 {
			key := RecordKey(path, k)
			l.Through[key] = through
			if own {
				l.At[key] = Elem{Page: id, Index: i}
			}
			continue
		}
		sub := string(k)
		if path != "" {
			sub = path + "/" + sub
		}
		if root := ne.Uint64(v); root != 0 {
			l.walk(data, sub, root, through)
		} else {
			l.leaf(data, sub, v[16:], id, through, false)
		}
	}
}

// pageOf returns the first page of bucket's pages with flags, past skip of them.
func (l *Layout) pageOf(bucket string, flags uint16, skip int) (uint64, bool) {
	for id := uint64(2); id < l.Meta().HWM; id++ {
		if l.Flags[id] == flags && l.Bucket[id] == bucket {
			if skip == 0 {
				return id, true
			}
			skip--
		}
	}
	return 0, false
}
