// Package boltstore keeps a spyder crawl's whole state in one bbolt file: the
// work queue (buckets pending, processing, dead, seen) and, through [Store.DB],
// whatever other buckets the crawl adds (emitted sets, output spool).
//
// # Layout
//
//   - pending: 8-byte big-endian keys → item JSON. Keys grow from 1<<63 for
//     items appended at the back; items returned to the front (Release) get
//     keys below the first one, so cursor order is FIFO.
//   - processing: lease ID → deadline (Unix ns), lease start (Unix ns), item
//     JSON. A reopened file knows which leases expired. Lease IDs are 16 hex
//     digits from the bucket's sequence.
//   - dead: 8-byte big-endian sequence → death time (Unix s), error length,
//     error, item bytes; oldest first.
//   - seen: normalised host → empty value.
//   - queue-meta: "counts" → the four collection sizes, kept in step with
//     every change so that Stats is cheap, and recounted at Open.
//
// Records spyder did not write (another program, a hand edit, a bad disk)
// do not stop the queue: pending bytes that do not decode go to dead when
// leased, processing records that do not decode or are too short go to
// dead at the next Reclaim whatever their deadline, dead records too short
// to parse are listed whole, and every such record is exported as raw
// bytes. A queue bucket holding a nested bucket is refused at Open with an
// error naming it.
//
// # Group commit
//
// Lease, AckAll, Extend and Fail from any number of goroutines are gathered by
// one committer goroutine into a single read-write transaction (one fsync):
// while one transaction commits, the next batch forms. AckAll, Extend and Fail
// return once their transaction is durable. Lease returns as soon as its
// items are taken, before the commit: only this process can see the lease
// (the file is locked), a crash before the commit leaves the items pending,
// and every later call on the lease runs after that commit.
//
// # Clocks
//
// Lease deadlines are wall clock times in the file, so that a reopened file
// tells which leases expired while no process held it. While the file is
// open they are measured on a clock anchored at Open: the wall clock read
// then, plus the time elapsed since on the monotonic clock. A wall clock
// step during a run (NTP correcting a bad clock, date -s, a VM or laptop
// resumed from suspend) therefore neither expires the leases in flight,
// which would make the periodic Reclaim hand every host being probed to a
// second worker, nor keeps an expired one alive. The file is locked to one
// process, so no other clock has to agree. Item timestamps ("ts") and death
// times are read from the wall clock: they are for people, not decisions.
package boltstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

var _ queue.Queue = (*Store)(nil)

var (
	bucketPending    = []byte("pending")
	bucketProcessing = []byte("processing")
	bucketDead       = []byte("dead")
	bucketSeen       = []byte("seen")
)

// Options configure [Open]. The zero value is ready to use.
type Options struct {
	// Timeout bounds the wait for the file lock held by another process;
	// zero means 1s. Open then fails naming the file.
	Timeout time.Duration

	// Now is the wall clock, for item timestamps and death times; nil means
	// time.Now. Lease deadlines are read from it once, at Open, and then
	// advance by the time Now reports as elapsed since that reading, which
	// for time.Now is the monotonic clock: a wall clock step during a run
	// neither expires nor prolongs a lease (see Clocks in the package doc).
	// A Now that returns times without a monotonic reading moves leases by
	// its wall time, as tests that move time by hand want. Lease waits use
	// real time regardless.
	Now func() time.Time

	// elapsed, when set (tests only), is the time passed since an arbitrary
	// origin; it replaces Now's monotonic reading, so a test can step the
	// wall clock alone.
	elapsed func() time.Duration

	// NoSync skips fsync on commit. Only for tests: a machine crash may then
	// lose or corrupt the file.
	NoSync bool
}

// Store is the bbolt [store.Backend]: its queue, and the seen set and spool
// in buckets of the same file. It is safe for concurrent use by
// many goroutines; the file is locked against other processes while open.
type Store struct {
	db   *bbolt.DB
	path string
	now  func() time.Time // the wall clock
	// Lease time is t0, the wall clock at Open, plus the time elapsed
	// since: see leaseNow.
	t0      time.Time
	elapsed func() time.Duration // tests only; nil: Now's monotonic reading
	e0      time.Duration        // elapsed() at Open

	qmu        sync.Mutex
	queued     *batch        // ops for the next commit
	committing *batch        // the batch being committed, or the last one
	kick       chan struct{} // wakes the committer; capacity 1
	quit       chan struct{} // closed by Close
	exited     chan struct{} // closed when the committer has returned
	closed     atomic.Bool   // set under qmu
	once       sync.Once

	// stopped is the error of the first commit the file did not take;
	// once set, every call returns it (see Open).
	stopped atomic.Pointer[writeError]
	// fault is the first failure to grow the file's memory map, shared
	// with the spool and the seen set, which write the same file.
	fault *mapFault

	mu    sync.Mutex
	avail chan struct{} // closed and replaced when pending grows

	// batchTx is the committer's shared transaction while it runs, and
	// batchD the size changes its ops made; both are touched only inside
	// write transactions, which bbolt serialises.
	batchTx *bbolt.Tx
	batchD  counts
}

// Open opens (creating if needed) the bbolt file at path and starts the
// committer. It fails with a message naming the file when another process
// holds it (after Options.Timeout), when it is not a bbolt database, or
// when it is damaged ([ErrDamaged]: its structure is read and checked
// first, and one problem named); in each case the file is left as it was.
//
// A write the file does not take (disk full, read-only file system, I/O
// error) stops the store: that call and every later one but Close return an
// error naming the file and the cause that matches [queue.ErrClosed]. The
// file keeps the state of the last commit it took; reopen it once the cause
// is fixed. Stopping, not carrying on, is what keeps the store honest: a
// Lease is answered before its commit (see Group commit), so after a failed
// commit this process holds leases the file does not know about.
func Open(path string, o Options) (*Store, error) {
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	db, err := openDB(path, o)
	if err != nil {
		return nil, err
	}
	s := &Store{
		db:      db,
		path:    path,
		fault:   &mapFault{},
		now:     o.Now,
		t0:      o.Now(),
		elapsed: o.elapsed,
		kick:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		exited:  make(chan struct{}),
		avail:   make(chan struct{}),
	}
	if s.elapsed != nil {
		s.e0 = s.elapsed()
	}
	go s.commitLoop()
	return s, nil
}

// leaseNow is the clock of lease deadlines and starts: the wall clock read
// at Open plus the time elapsed since on the monotonic clock. Only this
// process uses the file while it is open, so its leases need agree with no
// other clock; at the next Open the anchor is the wall clock again, so the
// file still tells which leases expired while no process held it.
func (s *Store) leaseNow() time.Time {
	if s.elapsed != nil {
		return s.t0.Add(s.elapsed() - s.e0)
	}
	return s.t0.Add(s.now().Sub(s.t0))
}

// DB returns the underlying database, so other packages can keep their own
// buckets in the same file. They must not touch the queue's buckets
// (pending, processing, dead, seen). It stays valid until Close.
func (s *Store) DB() *bbolt.DB { return s.db }

// Path returns the file the store was opened from.
func (s *Store) Path() string { return s.path }

// Close stops the committer, waiting for the batch in progress, and closes
// the file. Leases held are kept in the file and expire. A second Close
// returns queue.ErrClosed.
func (s *Store) Close() error {
	err := queue.ErrClosed
	s.once.Do(func() {
		s.qmu.Lock()
		s.closed.Store(true)
		s.qmu.Unlock()
		close(s.quit)
		select {
		case s.kick <- struct{}{}:
		default:
		}
		<-s.exited
		err = s.db.Close()
	})
	return err
}

// view and update run fn in a transaction, translating errors at one edge.
func (s *Store) view(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.settled()
	return translate(s.fault.explain(s.path, s.db.View(fn)))
}

func (s *Store) update(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	err := update(s.db, s.fault, fn)
	if errors.Is(err, store.ErrWritesRefused) {
		return s.stop(err)
	}
	return translate(err)
}

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return queue.ErrClosed
	}
	if e := s.stopped.Load(); e != nil {
		return e
	}
	return ctx.Err()
}

// writeError is a commit the file at path did not take: the disk is full,
// the file system read-only, the device failing. Doing the same work again
// fails the same way until that is fixed, so it names the file and the cause
// and matches [store.ErrWritesRefused] and the cause; a Store's (stopped)
// also matches [queue.ErrClosed].
type writeError struct {
	path    string
	err     error
	stopped bool
}

func (e *writeError) Error() string {
	msg := namingFile(e.path, e.err).Error() // bbolt's fsync errors do not name it
	if e.stopped {
		return msg + " (the store stopped at its last commit; reopen the file once that is fixed)"
	}
	return msg
}

func (e *writeError) Unwrap() []error {
	if e.stopped {
		return []error{store.ErrWritesRefused, queue.ErrClosed, e.err}
	}
	return []error{store.ErrWritesRefused, e.err}
}

// namingFile returns err prefixed with path, unless it names it already.
func namingFile(path string, err error) error {
	if strings.Contains(err.Error(), path) {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}

// ensureBucket creates the bucket name in db if needed and runs check on
// it, in one transaction: a bucket another program spoiled is reported when
// it is opened, naming the file, rather than failing every later write.
// what names the bucket's use in the error.
func ensureBucket(db *bbolt.DB, name []byte, what string, check func(*bbolt.Bucket) error) error {
	err := db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(name)
		if err != nil {
			return err
		}
		return check(b)
	})
	if err != nil {
		return fmt.Errorf("create %s bucket: %w", what, namingFile(db.Path(), err))
	}
	return nil
}

// update runs fn in a read-write transaction of db. An error of the commit
// itself, not of fn, comes back as a *writeError.
func update(db *bbolt.DB, f *mapFault, fn func(*bbolt.Tx) error) error {
	var applyErr error
	err := db.Update(func(tx *bbolt.Tx) error {
		applyErr = fn(tx)
		return applyErr
	})
	if e := f.explain(db.Path(), err); e != err {
		return e
	}
	if err != nil && applyErr == nil && !errors.Is(err, bbolt.ErrDatabaseNotOpen) {
		we := &writeError{path: db.Path(), err: err}
		f.first.CompareAndSwap(nil, we)
		return we
	}
	return err
}

// stop records a failed commit and returns the error every call returns
// from now on: the first one's, if another commit failed first.
func (s *Store) stop(err error) error {
	var we *writeError
	if errors.As(err, &we) {
		err = we.err
	}
	s.stopped.CompareAndSwap(nil, &writeError{path: s.path, err: err, stopped: true})
	return s.stopped.Load()
}

// mapFault keeps the first write a file did not take: a commit that failed,
// or bbolt failing to grow its memory map (the disk full or the file system
// read-only while the file grows). bbolt can leave the file unmapped after
// either, and every later call then fails with "database isn't correctly
// mapped", which hides the cause; the store, its spool and its seen set
// report the first failure instead.
type mapFault struct{ first atomic.Pointer[writeError] }

// explain returns err as the write error it is when it is a failure to map
// the file or the aftermath of one, and err unchanged otherwise.
func (f *mapFault) explain(path string, err error) error {
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "mmap allocate error"):
		f.first.CompareAndSwap(nil, &writeError{path: path, err: err})
		return f.first.Load()
	case errors.Is(err, berrors.ErrInvalidMapping) && f.first.Load() != nil:
		return f.first.Load()
	}
	return err
}

// translate maps bbolt's errors to the queue's sentinels.
func translate(err error) error {
	if errors.Is(err, bbolt.ErrDatabaseNotOpen) {
		return queue.ErrClosed
	}
	return err
}

// wake tells waiting Lease calls that pending grew.
func (s *Store) wake() {
	s.mu.Lock()
	close(s.avail)
	s.avail = make(chan struct{})
	s.mu.Unlock()
}

func (s *Store) availCh() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.avail
}
