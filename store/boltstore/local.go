package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/store"
)

// Files of a probe's state directory.
const (
	LocalFile = "probe.db"    // the bbolt file
	ownerFile = "probe.owner" // one line naming the process that holds it
)

// bucketHeld holds a fleet probe's writes to the shared queue that did not
// reach it, as the probe encodes them: 8-byte big-endian sequence keys
// (oldest first) → one entry.
var bucketHeld = []byte("held")

// Local is a fleet probe's own small bbolt file, in a directory of its
// own: what the probe could not hand on yet, kept on its disk so that
// neither a Redis that loses its data nor a restart of the probe loses it.
// It holds two FIFOs: the spool of output batches an ingest endpoint has
// not taken ([Local.Spool]) and the writes to the shared queue that could
// not reach it ([Local.Held]). The file is locked to one process; a file
// beside it names that process, so a second one is refused naming the
// first. It is safe for concurrent use.
type Local struct {
	db          *bbolt.DB
	dir         string
	spool, held *Spool
}

// LockedError is returned by [OpenLocal] when another process holds the
// directory's file.
type LockedError struct {
	Dir   string
	Owner string // what the holder wrote about itself; "" if unknown
}

func (e *LockedError) Error() string {
	if e.Owner == "" {
		return e.Dir + " is in use by another spyder process"
	}
	return e.Dir + " is in use by another spyder process (" + e.Owner + ")"
}

// Unwrap lets errors.Is match bbolt's lock timeout.
func (e *LockedError) Unwrap() error { return bbolt.ErrTimeout }

// OpenLocal opens (creating it and dir if needed) the probe file in dir
// and records who holds it (one line, e.g. "pid 12, probe p1 on host-a").
// When another process holds it after o.Timeout (1s when zero), it returns
// a [*LockedError] naming that process. A damaged file is refused as
// [Open] refuses one.
func OpenLocal(dir, who string, o Options) (*Local, error) {
	if o.Timeout <= 0 {
		o.Timeout = defaultLocalTimeout
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	db, err := openChecked(filepath.Join(dir, LocalFile), o)
	if errors.Is(err, bbolt.ErrTimeout) {
		owner, _ := os.ReadFile(filepath.Join(dir, ownerFile))
		return nil, &LockedError{Dir: dir, Owner: strings.TrimSpace(string(owner))}
	}
	if err != nil {
		return nil, err
	}
	l := &Local{db: db, dir: dir}
	f := &mapFault{}
	if l.spool, err = newSpool(db, f, bucketSpool, "spool"); err == nil {
		l.held, err = newSpool(db, f, bucketHeld, "held")
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, ownerFile), []byte(who+"\n"), 0o600)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return l, nil
}

// defaultLocalTimeout is how long OpenLocal waits for another process's
// lock: a probe that holds the directory holds it for its whole run, so
// waiting longer only delays the refusal.
const defaultLocalTimeout = 500 * time.Millisecond

// Spool returns the spool of output batches in the file.
func (l *Local) Spool() store.Spool { return l.spool }

// Held returns the FIFO of writes to the shared queue in the file.
func (l *Local) Held() store.Spool { return l.held }

// Dir returns the directory the file is in.
func (l *Local) Dir() string { return l.dir }

// Counts reports how many batches are spooled and how many writes held.
func (l *Local) Counts(ctx context.Context) (spooled, held int, err error) {
	if spooled, err = l.spool.Len(ctx); err == nil {
		held, err = l.held.Len(ctx)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", l.db.Path(), err)
	}
	return spooled, held, nil
}

// Close removes the owner line and closes the file; what it holds stays
// for the next process that opens the directory.
func (l *Local) Close() error {
	os.Remove(filepath.Join(l.dir, ownerFile))
	return l.db.Close()
}
