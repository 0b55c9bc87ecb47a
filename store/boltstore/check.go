package boltstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"go.etcd.io/bbolt"
)

// ErrDamaged is matched by the error [Open] returns for a bbolt file whose
// structure is broken: cut short, or with bytes bbolt did not write in its
// meta, freelist, branch or leaf pages. Open refuses such a file before
// bbolt reads it, so nothing is written to it; [Salvage] copies what can
// still be read into a new file.
var ErrDamaged = errors.New("boltstore: damaged bbolt file")

// damageError is a damaged file and the first problem found in it.
type damageError struct {
	path string
	loss Loss
}

func (e *damageError) Error() string { return e.path + " is damaged: " + e.loss.String() }

func (e *damageError) Is(target error) bool { return target == ErrDamaged }

// notBoltError is a file that is not a bbolt database at all.
func notBoltError(path string, cause error) error {
	return fmt.Errorf("%s is not a bbolt database: %w", path, cause)
}

// lockedError is a file another process holds open.
func lockedError(path string, waited time.Duration) error {
	return fmt.Errorf("%s is locked by another process (waited %v): %w", path, waited, bbolt.ErrTimeout)
}

// checkFile reads the whole structure of the bbolt file at path, as bbolt
// will when it opens it, and returns an error naming the file and the
// first problem if bbolt would fault or panic on it, or would later
// overwrite pages still in use: both meta pages valid, every page the newer
// one reaches inside the file and below its high-water mark, named by its
// own header, of the right type and reached once, every element inside its
// page with keys in order, and every page on the freelist free. Bytes
// inside a key or value are not checked: bbolt keeps no checksum of them.
//
// A missing or empty file, which bbolt creates, passes. It waits up to
// timeout for another process's lock, so that it never reads a file in
// the middle of a commit.
func checkFile(path string, timeout time.Duration) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return nil // bbolt.Open reports it, naming the file
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 || !st.Mode().IsRegular() {
		return nil
	}
	if err := lockShared(f, timeout); err != nil {
		if errors.Is(err, bbolt.ErrTimeout) {
			return lockedError(path, timeout)
		}
		return fmt.Errorf("lock %s: %w", path, err)
	}
	pf, losses, err := openPages(path, f, st.Size())
	if err != nil {
		return err
	}
	if len(losses) > 0 {
		return &damageError{path: path, loss: losses[0]}
	}
	w := newWalker(pf, true)
	w.walkPage(nil, pf.root, pf.meta, nil, nil)
	if !w.stopped() && pf.freelist != noFreelist {
		w.checkFreelist(pf.freelist)
	}
	if len(w.lost) > 0 {
		return &damageError{path: path, loss: w.lost[0]}
	}
	return nil
}

// openPages reads the meta pages of the bbolt file f (size bytes, named
// path) and returns its pages as the newest valid meta page sees them,
// with what is wrong with the meta pages and the file as a whole, most
// telling first. The error is for a file that was never a bbolt database,
// or one with no meta page left to read.
func openPages(path string, f *os.File, size int64) (*pageFile, []Loss, error) {
	mp := readMetas(f, size)
	if mp.notBolt() {
		return nil, nil, notBoltError(path, bbolt.ErrInvalid)
	}
	use := mp.newest()
	if use < 0 {
		return nil, nil, &damageError{path: path, loss: Loss{Page: -1,
			What: fmt.Sprintf("both meta pages are unreadable (meta page 0: %v; meta page 1: %v)", mp.err[0], mp.err[1])}}
	}
	m := mp.m[use]
	if m.version != boltVersion {
		return nil, nil, notBoltError(path, fmt.Errorf("format version %d, where bbolt reads %d: %w", m.version, boltVersion, bbolt.ErrVersionMismatch))
	}
	pf := &pageFile{f: f, size: size, pageSize: mp.pageSize, hwm: m.hwm, root: m.root, freelist: m.freelist, txid: m.txid, meta: uint64(use), metas: mp}
	var losses []Loss
	if pages := uint64(size) / uint64(mp.pageSize); m.hwm > pages {
		losses = append(losses, Loss{Page: -1, What: fmt.Sprintf(
			"truncated: it has %d bytes, but its meta page uses %d pages of %d bytes (%d bytes)",
			size, m.hwm, mp.pageSize, m.hwm*uint64(mp.pageSize))})
	}
	for i, err := range mp.err {
		if err != nil {
			losses = append(losses, Loss{Page: int64(i), What: fmt.Sprintf(
				"meta page %d: %v (meta page %d, of transaction %d, is intact)", i, err, use, m.txid)})
		}
	}
	if m.root < 2 || m.root >= m.hwm || (m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.hwm)) {
		losses = append(losses, Loss{Page: int64(use), What: fmt.Sprintf(
			"meta page %d: root page %d or freelist page %d is outside the pages in use (2 to %d)", use, m.root, m.freelist, int64(m.hwm)-1)})
	}
	return pf, losses, nil
}

// openDB checks the file at path and opens it with bbolt, creating the
// queue's buckets and recounting their sizes. A panic inside bbolt, for
// damage the check cannot see or a file changed since, becomes an error
// matching [ErrDamaged], and a memory fault in this goroutine a panic; the
// file is then left open until the process exits, since bbolt's state
// cannot be trusted to close it.
func openDB(path string, o Options) (db *bbolt.DB, err error) {
	if db, err = openChecked(path, o); err != nil {
		return nil, err
	}
	db.AllocSize = allocSize // bbolt.Options has no AllocSize
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketPending, bucketProcessing, bucketDead, bucketSeen, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("bucket %s: %w", b, err)
			}
		}
		return recount(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// openChecked checks the file at path (see checkFile) and opens it with
// bbolt, naming the file in every error. A panic inside bbolt, for damage
// the check cannot see, becomes an error matching [ErrDamaged] (see
// openDB).
func openChecked(path string, o Options) (db *bbolt.DB, err error) {
	if err := checkFile(path, o.Timeout); err != nil {
		return nil, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, &damageError{path: path, loss: Loss{Page: -1, What: fmt.Sprint(r)}}
		}
	}()
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout:        o.Timeout,
		NoSync:         o.NoSync,
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
	})
	switch {
	case errors.Is(err, bbolt.ErrTimeout):
		return nil, lockedError(path, o.Timeout)
	case errors.Is(err, bbolt.ErrInvalid), errors.Is(err, bbolt.ErrVersionMismatch), errors.Is(err, bbolt.ErrChecksum):
		return nil, notBoltError(path, err)
	case err != nil && strings.Contains(err.Error(), path): // "open PATH: read-only file system"
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}
