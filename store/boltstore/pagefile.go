package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/bits"
	"os"
)

// bbolt's file format, as this file reads it without bbolt. bbolt maps the
// file and trusts every page it reaches: a page that lies past the end of a
// truncated file faults, and one whose header or element offsets were
// overwritten panics deep inside a read. pageFile reads the same format
// with every offset and length checked against the page and the file, so
// that Open can refuse a damaged file before bbolt touches it and Salvage
// can copy what is still readable.
//
// A file is an array of pages. Pages 0 and 1 are meta pages, written in
// turn by each commit; the valid one with the higher transaction ID names
// the root bucket's page, the freelist page (or none) and the high-water
// mark: the number of pages in use. Every page starts with a 16-byte
// header (id, flags, element count, overflow pages), followed by 16-byte
// elements whose keys and values sit after the element array, at offsets
// relative to each element. A leaf element flagged as a bucket holds a
// 16-byte bucket header (root page, sequence) and, for a bucket whose root
// is 0, the bucket's one leaf page inline. Integers are in the machine's
// byte order, as bbolt writes them.
const (
	pageHeaderSize   = 16
	elemSize         = 16
	bucketHeaderSize = 16
	metaSize         = 64 // up to and including the checksum

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10
	leafBucket   = 0x01

	boltMagic   = 0xED0CDAED
	boltVersion = 2
	noFreelist  = ^uint64(0)
)

var ne = binary.NativeEndian

// Reasons a meta page is refused.
var (
	errNoMagic  = errors.New("no bbolt magic number")
	errChecksum = errors.New("checksum mismatch")
	errShort    = errors.New("cut short by the end of the file")
)

// meta is a decoded meta page.
type meta struct {
	version  uint32
	pageSize uint32
	root     uint64 // the root bucket's page
	freelist uint64 // noFreelist when the freelist is not kept in the file
	hwm      uint64 // pages in use: every page the meta reaches is below it
	txid     uint64
}

// parseMeta decodes the meta page that starts b. A page whose checksum does
// not match its fields is refused, as bbolt refuses it.
func parseMeta(b []byte) (meta, error) {
	if len(b) < pageHeaderSize+4 || ne.Uint32(b[pageHeaderSize:]) != boltMagic {
		return meta{}, errNoMagic
	}
	if len(b) < pageHeaderSize+metaSize {
		return meta{}, errShort
	}
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	h := fnv.New64a()
	h.Write(m[:56])
	if h.Sum64() != ne.Uint64(m[56:]) {
		return meta{}, errChecksum
	}
	if ps := ne.Uint32(m[8:]); ps < 1024 || ps > 1<<26 {
		return meta{}, fmt.Errorf("page size %d", ps)
	}
	return meta{
		version:  ne.Uint32(m[4:]),
		pageSize: ne.Uint32(m[8:]),
		root:     ne.Uint64(m[16:]),
		freelist: ne.Uint64(m[32:]),
		hwm:      ne.Uint64(m[40:]),
		txid:     ne.Uint64(m[48:]),
	}, nil
}

// metaPages are the two meta pages of a file and what is wrong with each.
type metaPages struct {
	pageSize int // 0 when neither meta page could be read
	m        [2]meta
	err      [2]error
}

// readMetas reads both meta pages of f, which is size bytes long. As bbolt
// does, it takes the page size from meta page 0 or, when that one is
// damaged, from meta page 1 found at the page sizes bbolt may use.
func readMetas(f *os.File, size int64) metaPages {
	var mp metaPages
	mp.m[0], mp.err[0] = parseMeta(readAt(f, 0, 4096))
	if mp.err[0] == nil {
		mp.pageSize = int(mp.m[0].pageSize)
		mp.m[1], mp.err[1] = parseMeta(readAt(f, int64(mp.pageSize), 4096))
	} else {
		mp.err[1] = errNoMagic
		for off := int64(1024); off <= 1<<24 && off < size; off <<= 1 {
			m, err := parseMeta(readAt(f, off, 4096))
			if err == nil && int64(m.pageSize) == off {
				mp.m[1], mp.err[1], mp.pageSize = m, nil, int(off)
				break
			}
			if errors.Is(err, errChecksum) {
				mp.err[1] = err // a meta page was here, damaged
			}
		}
	}
	for i := range mp.m {
		if mp.err[i] == nil && mp.m[i].pageSize != uint32(mp.pageSize) {
			mp.err[i] = fmt.Errorf("page size %d, where the other meta page says %d", mp.m[i].pageSize, mp.pageSize)
		}
	}
	return mp
}

// notBolt reports whether neither meta page carries bbolt's magic number:
// the file was never a bbolt file, rather than a damaged one.
func (mp metaPages) notBolt() bool {
	return errors.Is(mp.err[0], errNoMagic) && errors.Is(mp.err[1], errNoMagic)
}

// newest returns the index of the valid meta page with the higher
// transaction ID, the one bbolt reads, or -1 when neither is valid.
func (mp metaPages) newest() int {
	best := -1
	for i := range mp.m {
		if mp.err[i] == nil && (best < 0 || mp.m[i].txid > mp.m[best].txid) {
			best = i
		}
	}
	return best
}

// readAt returns up to n bytes of f from off: fewer at the end of the file
// or on a read error, which the parsers then report as a short page.
func readAt(f *os.File, off int64, n int) []byte {
	b := make([]byte, n)
	k, _ := f.ReadAt(b, off)
	return b[:k]
}

// pageFile reads the pages of a bbolt file below the high-water mark of
// the meta page in use.
type pageFile struct {
	f        *os.File
	size     int64 // the file's length in bytes
	pageSize int
	// From the meta page in use: the high-water mark, the root bucket's
	// page, the freelist page (or noFreelist) and the transaction.
	hwm, root, freelist, txid uint64
	meta                      uint64 // which meta page: 0 or 1
	metas                     metaPages
}

// page is a branch, leaf or freelist page, read whole with its overflow
// pages, or a bucket's inline leaf page.
type page struct {
	id       uint64
	flags    uint16
	count    int
	overflow uint32
	data     []byte
}

// read reads page id and its overflow pages. It checks that the page lies
// inside the file and below the high-water mark, and that its header names
// it; it does not check the page's type or elements.
func (pf *pageFile) read(id uint64) (*page, error) {
	if id < 2 || id >= pf.hwm {
		return nil, fmt.Errorf("page %d is outside the pages in use (2 to %d)", id, int64(pf.hwm)-1)
	}
	ps, inFile := int64(pf.pageSize), uint64(pf.size)/uint64(pf.pageSize)
	if id >= inFile {
		return nil, fmt.Errorf("page %d lies past the end of the file (%d bytes)", id, pf.size)
	}
	buf := readAt(pf.f, int64(id)*ps, pf.pageSize)
	if len(buf) < pf.pageSize {
		return nil, fmt.Errorf("page %d cannot be read", id)
	}
	p := parseHeader(buf)
	if p.id != id {
		return nil, fmt.Errorf("page %d's header says it is page %d", id, p.id)
	}
	if p.overflow > 0 {
		end, carry := bits.Add64(id+1, uint64(p.overflow), 0)
		if carry != 0 || end > pf.hwm || end > inFile {
			return nil, fmt.Errorf("page %d claims %d overflow pages, past the pages in use", id, p.overflow)
		}
		rest := make([]byte, int64(p.overflow)*ps)
		if _, err := pf.f.ReadAt(rest, int64(id+1)*ps); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("page %d: %w", id, err)
		}
		p.data = append(buf, rest...)
	}
	return p, nil
}

// parseHeader decodes the page header at the start of b (at least
// pageHeaderSize bytes); the page's data is b.
func parseHeader(b []byte) *page {
	return &page{
		id:       ne.Uint64(b),
		flags:    ne.Uint16(b[8:]),
		count:    int(ne.Uint16(b[10:])),
		overflow: ne.Uint32(b[12:]),
		data:     b,
	}
}

// inlinePage decodes the inline leaf page of a bucket header value v.
func inlinePage(v []byte) (*page, error) {
	if len(v) < bucketHeaderSize+pageHeaderSize {
		return nil, fmt.Errorf("inline bucket of %d bytes is too short for its page", len(v))
	}
	p := parseHeader(v[bucketHeaderSize:])
	if p.flags != flagLeaf {
		return nil, fmt.Errorf("inline bucket page has flags %#x, not a leaf page's", p.flags)
	}
	return p, nil
}

// elem is one element of a branch or leaf page.
type elem struct {
	bucket bool   // leaf: value is a nested bucket's header
	key    []byte // aliases the page
	value  []byte // leaf: aliases the page
	child  uint64 // branch: the page holding keys from key on
}

// elems decodes the elements of a branch or leaf page. A page whose element
// array does not fit is refused whole; an element whose key or value lies
// outside the page's data, or whose flags bbolt never writes, comes back
// as an error in bad at its index while the others are decoded.
func (p *page) elems() (els []elem, bad map[int]error, err error) {
	if p.flags != flagBranch && p.flags != flagLeaf {
		return nil, nil, fmt.Errorf("page %d has flags %#x, not a branch or leaf page's", p.id, p.flags)
	}
	start := pageHeaderSize + p.count*elemSize // keys and values lie from here on
	if start > len(p.data) {
		return nil, nil, fmt.Errorf("page %d counts %d elements, more than it can hold", p.id, p.count)
	}
	els = make([]elem, p.count)
	for i := range els {
		off := pageHeaderSize + i*elemSize
		e := p.data[off : off+elemSize]
		if err := p.decode(&els[i], e, off, start); err != nil {
			if bad == nil {
				bad = map[int]error{}
			}
			bad[i] = fmt.Errorf("page %d element %d: %w", p.id, i, err)
		}
	}
	return els, bad, nil
}

// decode fills el from the element e found at offset off of the page.
func (p *page) decode(el *elem, e []byte, off, start int) error {
	var pos, ksize, vsize uint64
	if p.flags == flagBranch {
		pos, ksize, el.child = uint64(ne.Uint32(e)), uint64(ne.Uint32(e[4:])), ne.Uint64(e[8:])
	} else {
		flags := ne.Uint32(e)
		if flags&^leafBucket != 0 {
			return fmt.Errorf("flags %#x", flags)
		}
		el.bucket = flags == leafBucket
		pos, ksize, vsize = uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
	}
	k := uint64(off) + pos
	end := k + ksize + vsize
	if k < uint64(start) || end > uint64(len(p.data)) {
		return fmt.Errorf("key and value (bytes %d to %d) lie outside the page's data (%d to %d)", k, end, start, len(p.data))
	}
	el.key = p.data[k : k+ksize]
	el.value = p.data[k+ksize : end]
	if el.bucket && len(el.value) < bucketHeaderSize {
		return fmt.Errorf("bucket %q has a %d-byte header", el.key, len(el.value))
	}
	return nil
}

// freelistIDs decodes the page IDs a freelist page lists.
func (p *page) freelistIDs() ([]uint64, error) {
	if p.flags != flagFreelist {
		return nil, fmt.Errorf("freelist page %d has flags %#x, not a freelist page's", p.id, p.flags)
	}
	n, first := uint64(p.count), pageHeaderSize
	if n == 0xFFFF { // the count did not fit the header: it is the first ID
		if len(p.data) < pageHeaderSize+8 {
			return nil, fmt.Errorf("freelist page %d is too short for its count", p.id)
		}
		n, first = ne.Uint64(p.data[pageHeaderSize:]), pageHeaderSize+8
	}
	if n > uint64(len(p.data)-first)/8 {
		return nil, fmt.Errorf("freelist page %d lists %d pages, more than it can hold", p.id, n)
	}
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = ne.Uint64(p.data[first+8*i:])
	}
	return ids, nil
}

// inRange reports whether key k lies in [lo, hi), a nil bound being open.
func inRange(k, lo, hi []byte) bool {
	return (lo == nil || bytes.Compare(k, lo) >= 0) && (hi == nil || bytes.Compare(k, hi) < 0)
}
