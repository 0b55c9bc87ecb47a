package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.etcd.io/bbolt"
)

// SalvageReport says what [Salvage] copied and what it could not read.
type SalvageReport struct {
	// Txid is the transaction of the meta page the copy was read from.
	Txid uint64
	// Buckets counts what was copied of each top-level bucket, by name;
	// the queue's four buckets are always listed.
	Buckets []BucketReport
	// Lost lists the meta pages, pages and elements that could not be read
	// (or, rarely, written: a record bbolt refuses), in the order met; what
	// they held is not in the copy.
	Lost []Loss
}

// BucketReport counts what [Salvage] copied of one top-level bucket.
type BucketReport struct {
	Name    string
	Records int // key/value records, those of nested buckets included
	Nested  int // nested buckets
	// Counted is, for the queue's buckets (pending, processing, dead and
	// seen), the size the file kept beside them at its last commit; -1
	// when that record could not be read, and for other buckets.
	Counted int64
}

// Salvage copies every bucket and record it can read from the bbolt file
// src, damaged or not, into a new file dst, and reports what it could not
// read. It reads src with the same bounds-checked reader as [Open]'s check,
// from the newest valid meta page (the other one when the newest's root
// page is unreadable), and goes around every unreadable page and element:
// a lost branch page loses the pages below it, a lost leaf page only its
// own records. Buckets keep their sequences, so new keys do not reuse old
// ones. dst is then opened as a store, which recounts the queue's sizes.
//
// src is only read, under a shared lock: Salvage refuses a file another
// process holds open. It refuses a dst that exists or is src, and removes
// dst if it fails.
func Salvage(src, dst string) (rep SalvageReport, err error) {
	if err := distinct(src, dst); err != nil {
		return rep, err
	}
	f, size, err := openSource(src)
	if err != nil {
		return rep, err
	}
	defer f.Close()
	pf, losses, err := openPages(src, f, size)
	if err != nil {
		return rep, err
	}
	pf.pickRoot()
	out, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return rep, fmt.Errorf("%s already exists: salvage writes a new file", dst)
	}
	if err != nil {
		return rep, err
	}
	out.Close()
	defer func() {
		if err != nil {
			os.Remove(dst)
		}
	}()
	rep, err = copyPages(pf, dst)
	if err != nil {
		return rep, fmt.Errorf("salvage into %s: %w", dst, err)
	}
	rep.Lost = append(losses, rep.Lost...)
	s, err := Open(dst, Options{})
	if err != nil {
		return rep, err
	}
	return rep, s.Close()
}

// distinct refuses a dst that names src.
func distinct(src, dst string) error {
	a, err1 := filepath.Abs(src)
	b, err2 := filepath.Abs(dst)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if a == b {
		return fmt.Errorf("%s is the file to salvage: name a new file to write", dst)
	}
	if sa, err := os.Stat(src); err == nil {
		if sb, err := os.Stat(dst); err == nil && os.SameFile(sa, sb) {
			return fmt.Errorf("%s is the file to salvage: name a new file to write", dst)
		}
	}
	return nil
}

// openSource opens the file to salvage for reading, under a shared lock.
func openSource(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	switch {
	case err != nil:
	case !st.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file", path)
	case st.Size() == 0:
		err = fmt.Errorf("%s is empty: there is nothing to salvage", path)
	default:
		err = lockShared(f, 0)
		if errors.Is(err, bbolt.ErrTimeout) {
			err = fmt.Errorf("%s is in use by another process: stop it before salvaging", path)
		}
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// pickRoot switches to the older meta page when the newer one's root page
// cannot be read and the older one's can: the older tree is one commit
// behind, but bbolt keeps it intact until the commit after.
func (pf *pageFile) pickRoot() {
	readable := func(m meta) bool {
		p, err := (&pageFile{f: pf.f, size: pf.size, pageSize: pf.pageSize, hwm: m.hwm}).read(m.root)
		return err == nil && (p.flags == flagBranch || p.flags == flagLeaf)
	}
	use := pf.metas.newest()
	alt := 1 - use
	if readable(pf.metas.m[use]) || pf.metas.err[alt] != nil || !readable(pf.metas.m[alt]) {
		return
	}
	m := pf.metas.m[alt]
	pf.hwm, pf.root, pf.freelist, pf.txid, pf.meta = m.hwm, m.root, m.freelist, m.txid, uint64(alt)
}

// copyPages walks pf's tree into a new bbolt file at dst, which exists
// and is empty.
func copyPages(pf *pageFile, dst string) (SalvageReport, error) {
	db, err := bbolt.Open(dst, 0o600, &bbolt.Options{NoSync: true, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return SalvageReport{}, err
	}
	defer db.Close()
	c := &copier{db: db, counted: map[string]int64{}, byName: map[string]*BucketReport{}}
	for _, name := range [][]byte{bucketPending, bucketProcessing, bucketDead, bucketSeen} {
		c.report(string(name))
	}
	w := newWalker(pf, false)
	w.bucket, w.record = c.bucket, c.record
	w.walkPage(nil, pf.root, pf.meta, nil, nil)
	if pf.freelist != noFreelist {
		w.checkFreelist(pf.freelist) // holds no record, but its damage is worth telling
	}
	err = c.commit(false)
	if err == nil {
		err = db.Sync()
	}
	if err == nil {
		err = db.Close()
	}
	rep := SalvageReport{Txid: pf.txid, Lost: append(w.lost, c.lost...)}
	for _, b := range c.byName {
		if n, ok := c.counted[b.Name]; ok {
			b.Counted = n
		}
		rep.Buckets = append(rep.Buckets, *b)
	}
	slices.SortFunc(rep.Buckets, func(a, b BucketReport) int { return strings.Compare(a.Name, b.Name) })
	return rep, err
}

// copier writes what the walker reads into the new file, committing every
// copyBatch records so that memory stays bounded. The walker's bytes stay
// valid while it runs (every page is read into its own buffer), as bbolt
// needs until the commit.
type copier struct {
	db      *bbolt.DB
	tx      *bbolt.Tx
	puts    int
	path    string        // the bucket b is, as pathKey
	b       *bbolt.Bucket // in tx
	err     error         // the first failed write: the copy stops
	lost    []Loss
	byName  map[string]*BucketReport
	counted map[string]int64
}

const copyBatch = 50_000

func (c *copier) report(name string) *BucketReport {
	r := c.byName[name]
	if r == nil {
		r = &BucketReport{Name: name, Counted: -1}
		c.byName[name] = r
	}
	return r
}

// bucket creates the nested bucket at path with its sequence.
func (c *copier) bucket(path [][]byte, seq uint64) {
	if c.begin() != nil {
		return
	}
	r := c.report(string(path[0]))
	if len(path) > 1 {
		r.Nested++
	}
	var b *bbolt.Bucket
	var err error
	if parent := c.lookup(path[:len(path)-1]); len(path) == 1 {
		b, err = c.tx.CreateBucketIfNotExists(path[0])
	} else if parent != nil {
		b, err = parent.CreateBucketIfNotExists(path[len(path)-1])
	} else {
		err = errors.New("its parent bucket could not be copied")
	}
	if err == nil && seq > b.Sequence() {
		err = b.SetSequence(seq)
	}
	if err != nil {
		c.lost = append(c.lost, Loss{Bucket: pathString(path), Page: -1, What: "bucket not copied: " + err.Error()})
	}
}

// record copies one record into the bucket at path.
func (c *copier) record(path [][]byte, id uint64, k, v []byte) {
	if c.begin() != nil {
		return
	}
	if len(path) == 1 && string(path[0]) == string(bucketMeta) && string(k) == string(keyCounts) && len(v) == 32 {
		for i, name := range [][]byte{bucketPending, bucketProcessing, bucketDead, bucketSeen} {
			c.counted[string(name)] = int64(binary.BigEndian.Uint64(v[8*i:]))
		}
	}
	if key := pathKey(path); key != c.path || c.b == nil {
		c.path, c.b = key, c.lookup(path)
	}
	err := errors.New("its bucket could not be copied")
	if c.b != nil {
		err = c.b.Put(k, v)
	}
	if err != nil {
		c.lost = append(c.lost, Loss{Bucket: pathString(path), Page: int64(id), What: fmt.Sprintf("page %d: record %x not copied: %v", id, k, err)})
		return
	}
	c.report(string(path[0])).Records++
	if c.puts++; c.puts >= copyBatch {
		c.err = c.commit(true)
	}
}

// lookup returns the bucket at path in the current transaction, or nil.
func (c *copier) lookup(path [][]byte) *bbolt.Bucket {
	if len(path) == 0 {
		return nil
	}
	b := c.tx.Bucket(path[0])
	for _, name := range path[1:] {
		if b == nil {
			return nil
		}
		b = b.Bucket(name)
	}
	return b
}

// begin starts a transaction when none is open, and reports a failed
// write, after which nothing more is copied.
func (c *copier) begin() error {
	if c.err == nil && c.tx == nil {
		c.tx, c.err = c.db.Begin(true)
	}
	return c.err
}

// commit commits the open transaction; with more, the next record starts
// a new one.
func (c *copier) commit(more bool) error {
	if c.err != nil || c.tx == nil {
		return c.err
	}
	err := c.tx.Commit()
	c.tx, c.b, c.path, c.puts = nil, nil, "", 0
	if err == nil && more {
		err = c.begin()
	}
	return err
}

// pathKey encodes a bucket path as a map key, each name length-prefixed.
func pathKey(path [][]byte) string {
	var b []byte
	for _, p := range path {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return string(b)
}
