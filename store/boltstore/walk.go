package boltstore

import (
	"bytes"
	"fmt"
	"strings"
)

// Loss is a part of a bbolt file that cannot be read: a meta page, a page
// of a bucket, or one element of a page.
type Loss struct {
	// Bucket is the path of the bucket the page belongs to, names joined
	// by "/"; empty for the top level and for meta and freelist pages.
	Bucket string
	// Page is the page's ID (0 or 1 for a meta page), or -1 for the file
	// as a whole.
	Page int64
	// What says what is wrong with it, naming the page.
	What string
}

func (l Loss) String() string {
	if l.Bucket == "" {
		return l.What
	}
	return "bucket " + l.Bucket + ": " + l.What
}

// walker visits every bucket and record reachable from a root page.
// Strict, it stops at the first problem, including keys out of order and
// a page reached twice, which bbolt's own open-time walk refuses with a
// panic; otherwise it records each unreadable page or element as a Loss
// and goes on with the rest of the tree.
type walker struct {
	pf      *pageFile
	strict  bool
	visited map[uint64]bool // pages reached
	lost    []Loss

	// bucket is called for each nested bucket before its records, with its
	// path and sequence; record for each key/value record with the path of
	// its bucket and the page it is on. Both may be nil. path is only valid
	// during the call; key and value alias the page read, which is never
	// reused.
	bucket func(path [][]byte, seq uint64)
	record func(path [][]byte, page uint64, key, value []byte)
}

func newWalker(pf *pageFile, strict bool) *walker {
	return &walker{pf: pf, strict: strict, visited: map[uint64]bool{}}
}

// stopped reports whether a strict walk has found its problem.
func (w *walker) stopped() bool { return w.strict && len(w.lost) > 0 }

func (w *walker) lose(path [][]byte, page uint64, err error) {
	if !w.stopped() {
		w.lost = append(w.lost, Loss{Bucket: pathString(path), Page: int64(page), What: err.Error()})
	}
}

// mark records pages id to id+n as reached and reports whether none of
// them was reached before.
func (w *walker) mark(id uint64, n uint32) bool {
	fresh := true
	for p := id; p <= id+uint64(n); p++ {
		fresh = fresh && !w.visited[p]
		w.visited[p] = true
	}
	return fresh
}

// walkPage walks the subtree rooted at page id of the bucket at path,
// whose keys must lie in [lo, hi). from is the page that points to it (a
// meta page for the root), which a bad pointer is reported against.
func (w *walker) walkPage(path [][]byte, id, from uint64, lo, hi []byte) {
	if w.stopped() {
		return
	}
	if id < 2 || id >= w.pf.hwm || w.visited[id] {
		why := fmt.Sprintf("outside the pages in use (2 to %d)", int64(w.pf.hwm)-1)
		if w.visited[id] {
			why = "which is reached twice"
		}
		w.lose(path, from, fmt.Errorf("page %d points to page %d, %s", from, id, why))
		return
	}
	p, err := w.pf.read(id)
	if err != nil {
		w.lose(path, id, err)
		return
	}
	if !w.mark(id, p.overflow) {
		w.lose(path, id, fmt.Errorf("page %d's overflow pages belong to another page too", id))
		return
	}
	w.walkElems(path, p, id, lo, hi)
}

// walkElems walks the elements of page p, which is page id or inline in
// it. Children of a branch page inherit the key range of their element.
func (w *walker) walkElems(path [][]byte, p *page, id uint64, lo, hi []byte) {
	els, bad, err := p.elems()
	if err == nil && p.flags == flagBranch && len(els) == 0 {
		err = fmt.Errorf("branch page %d holds no element", id)
	}
	if err != nil {
		w.lose(path, id, err)
		return
	}
	var prev []byte
	for i, e := range els {
		if w.stopped() {
			return
		}
		if bad[i] != nil {
			w.lose(path, id, bad[i])
			continue
		}
		if w.strict && (!inRange(e.key, lo, hi) || (i > 0 && bytes.Compare(prev, e.key) >= 0)) {
			w.lose(path, id, fmt.Errorf("page %d element %d: key %x is out of order", id, i, e.key))
			return
		}
		prev = e.key
		switch {
		case p.flags == flagBranch:
			next := hi
			if i+1 < len(els) && bad[i+1] == nil {
				next = els[i+1].key
			}
			w.walkPage(path, e.child, id, e.key, next)
		case e.bucket:
			w.walkBucket(append(path[:len(path):len(path)], e.key), e.value, id)
		case len(path) == 0:
			w.lose(path, id, fmt.Errorf("page %d element %d: a value at the top level, where bbolt keeps only buckets", id, i))
		case w.record != nil:
			w.record(path, id, e.key, e.value)
		}
	}
}

// walkBucket walks the bucket at path whose header is v, found on page id.
func (w *walker) walkBucket(path [][]byte, v []byte, id uint64) {
	root, seq := ne.Uint64(v), ne.Uint64(v[8:])
	if w.bucket != nil {
		w.bucket(path, seq)
	}
	if root != 0 {
		w.walkPage(path, root, id, nil, nil)
		return
	}
	p, err := inlinePage(v)
	if err != nil {
		w.lose(path, id, err)
		return
	}
	w.walkElems(path, p, id, nil, nil)
}

// checkFreelist checks the freelist page of a file whose tree was walked:
// a page bbolt would hand out while the tree still uses it, or free twice,
// would be overwritten by the next commit.
func (w *walker) checkFreelist(id uint64) {
	p, err := w.pf.read(id)
	if err == nil && w.visited[id] {
		err = fmt.Errorf("freelist page %d is also in the tree", id)
	}
	var ids []uint64
	if err == nil {
		ids, err = p.freelistIDs()
	}
	if err != nil {
		w.lose(nil, id, err)
		return
	}
	if !w.mark(id, p.overflow) {
		w.lose(nil, id, fmt.Errorf("freelist page %d's overflow pages are also in the tree", id))
		return
	}
	for _, f := range ids {
		if f < 2 || f >= w.pf.hwm || !w.mark(f, 0) {
			w.lose(nil, id, fmt.Errorf("freelist page %d lists page %d, which is not free", id, f))
			return
		}
	}
}

// pathString joins a bucket path for messages.
func pathString(path [][]byte) string {
	names := make([]string, len(path))
	for i, p := range path {
		names[i] = strings.ToValidUTF8(string(p), "?")
	}
	return strings.Join(names, "/")
}
