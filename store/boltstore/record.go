package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// backBase is where appended pending keys start, leaving the lower half of
// the key space for items returned to the front.
const backBase = 1 << 63

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// pushBack appends raw to pending. Its key is above every key before it,
// so pages are filled whole before they split instead of half (bbolt's
// default, which suits keys that arrive in no order): a seeded list takes
// half the pages, and the file's high-water mark is lower.
func pushBack(b *bbolt.Bucket, raw []byte) error {
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	b.FillPercent = 1.0
	return b.Put(u64(backBase+seq), raw)
}

// allocSize is how much the file grows at a time once it is past a few
// MiB (bbolt's default is 16 MiB): a file's size is then within 4 MiB of
// what it holds, at the cost of growing it (and syncing its size) four
// times as often, once every few thousand hosts.
const allocSize = 4 << 20

// pushFront puts raw before every pending item: under the first key's
// first 8 bytes (zero-padded) minus one, which sorts before it. A first key
// of zeros (which spyder never writes) has nothing before it: raw then goes
// to the back, out of order but not lost.
func pushFront(b *bbolt.Bucket, raw []byte) error {
	k, _ := b.Cursor().First()
	var first [8]byte
	copy(first[:], k)
	v := binary.BigEndian.Uint64(first[:])
	if v == 0 {
		return pushBack(b, raw)
	}
	return b.Put(u64(v-1), raw)
}

// procValue is a processing record: deadline and lease start in Unix ns,
// then the item bytes.
func procValue(deadline, start time.Time, raw []byte) []byte {
	v := make([]byte, 16, 16+len(raw))
	binary.BigEndian.PutUint64(v, uint64(deadline.UnixNano()))
	binary.BigEndian.PutUint64(v[8:], uint64(start.UnixNano()))
	return append(v, raw...)
}

type procRecord struct {
	deadline, start time.Time
	raw             []byte // aliases the value; copy before the tx ends
}

func parseProc(v []byte) (procRecord, error) {
	if len(v) < 16 {
		return procRecord{}, errors.New("short processing record")
	}
	return procRecord{
		deadline: time.Unix(0, int64(binary.BigEndian.Uint64(v))),
		start:    time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))),
		raw:      v[16:],
	}, nil
}

// newLeaseID returns the next lease ID, 16 hex digits so that IDs sort in
// the order they were made.
func newLeaseID(b *bbolt.Bucket) ([]byte, error) {
	seq, err := b.NextSequence()
	if err != nil {
		return nil, err
	}
	const hex = "0123456789abcdef"
	id := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		id[i] = hex[seq&0xf]
		seq >>= 4
	}
	return id, nil
}

// bumpLeaseSeq keeps newLeaseID from reusing a loaded ID of its own form.
func bumpLeaseSeq(b *bbolt.Bucket, id string) error {
	if len(id) != 16 {
		return nil
	}
	n, err := strconv.ParseUint(id, 16, 64)
	if err != nil || n <= b.Sequence() {
		return nil
	}
	return b.SetSequence(n)
}

// putDead appends raw to dead with why and when.
func putDead(b *bbolt.Bucket, raw []byte, reason string, at time.Time) error {
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	v := make([]byte, 12, 12+len(reason)+len(raw))
	binary.BigEndian.PutUint64(v, uint64(at.Unix()))
	binary.BigEndian.PutUint32(v[8:], uint32(len(reason)))
	v = append(append(v, reason...), raw...)
	return b.Put(u64(seq), v)
}

// parseDead decodes a dead value into a DeadItem, copying the bytes. A
// value that is not a dead record (spyder never writes one) comes back
// whole as Raw, with an error saying so, so that it can be listed, exported
// and purged like any other.
func parseDead(v []byte) queue.DeadItem {
	if len(v) < 12 || len(v) < 12+int(binary.BigEndian.Uint32(v[8:])) {
		return queue.DeadItem{Raw: append([]byte(nil), v...), Error: fmt.Sprintf("corrupt dead record (%d bytes)", len(v))}
	}
	n := int(binary.BigEndian.Uint32(v[8:]))
	d := queue.DeadItem{
		At:    int64(binary.BigEndian.Uint64(v)),
		Error: string(v[12 : 12+n]),
		Raw:   append([]byte(nil), v[12+n:]...),
	}
	if it, err := queue.DecodeItem(d.Raw); err == nil {
		d.Item = &it
	}
	return d
}

// retryOrBury returns raw's item to the back of pending with attempt+1, or
// to dead with reason once that reaches max, counting the addition. It
// reports whether it died.
func (s *Store) retryOrBury(tx *bbolt.Tx, raw []byte, reason string, max int, now time.Time) (h host.Name, dead bool, err error) {
	bury := func(h host.Name, raw []byte, reason string) (host.Name, bool, error) {
		if err := putDead(tx.Bucket(bucketDead), raw, reason, now); err != nil {
			return h, true, err
		}
		if h != "" {
			if err := s.setSeen(tx, h, seenIdle, false); err != nil {
				return h, true, err
			}
		}
		return h, true, s.count(tx, counts{dead: 1})
	}
	it, err := queue.DecodeItem(raw)
	if err != nil {
		return bury("", raw, "undecodable item: "+err.Error())
	}
	if max <= 0 {
		max = queue.DefaultMaxAttempts
	}
	it.Attempt++
	enc, err := it.MarshalJSON()
	if err != nil {
		return bury(it.Host, raw, "unencodable item: "+err.Error())
	}
	if it.Attempt >= max {
		return bury(it.Host, enc, reason)
	}
	if err := pushBack(tx.Bucket(bucketPending), enc); err != nil {
		return it.Host, false, err
	}
	return it.Host, false, s.count(tx, counts{pending: 1})
}

// bucketMeta holds the queue's collection sizes under keyCounts, kept in the
// same transactions as the changes, so Stats need not walk the buckets.
var (
	bucketMeta = []byte("queue-meta")
	keyCounts  = []byte("counts")
)

// counts are collection sizes or changes to them.
type counts struct{ pending, processing, dead, seen int64 }

func readCounts(tx *bbolt.Tx) counts {
	v := tx.Bucket(bucketMeta).Get(keyCounts)
	if len(v) != 32 {
		return counts{}
	}
	return counts{
		pending:    int64(binary.BigEndian.Uint64(v)),
		processing: int64(binary.BigEndian.Uint64(v[8:])),
		dead:       int64(binary.BigEndian.Uint64(v[16:])),
		seen:       int64(binary.BigEndian.Uint64(v[24:])),
	}
}

func writeCounts(tx *bbolt.Tx, c counts) error {
	v := make([]byte, 32)
	binary.BigEndian.PutUint64(v, uint64(c.pending))
	binary.BigEndian.PutUint64(v[8:], uint64(c.processing))
	binary.BigEndian.PutUint64(v[16:], uint64(c.dead))
	binary.BigEndian.PutUint64(v[24:], uint64(c.seen))
	return tx.Bucket(bucketMeta).Put(keyCounts, v)
}

// addCounts applies d to the stored sizes.
func addCounts(tx *bbolt.Tx, d counts) error {
	if d == (counts{}) {
		return nil
	}
	c := readCounts(tx)
	c.pending += d.pending
	c.processing += d.processing
	c.dead += d.dead
	c.seen += d.seen
	return writeCounts(tx, c)
}

// count applies d to the stored sizes, or, inside the committer's shared
// transaction, adds it to the sum that transaction writes once at its end.
func (s *Store) count(tx *bbolt.Tx, d counts) error {
	if tx != s.batchTx {
		return addCounts(tx, d)
	}
	s.batchD.pending += d.pending
	s.batchD.processing += d.processing
	s.batchD.dead += d.dead
	s.batchD.seen += d.seen
	return nil
}

// recount stores the sizes counted from the buckets. Open calls it, so that
// sizes left wrong by a program other than spyder (or a file from before
// the counts were kept) are right again; counting a million items takes
// tens of milliseconds. It refuses a queue bucket holding a nested bucket:
// spyder never writes one, and its cursors could neither decode nor
// delete it.
func recount(tx *bbolt.Tx) error {
	var n [4]int64
	for i, name := range [][]byte{bucketPending, bucketProcessing, bucketDead, bucketSeen} {
		st := tx.Bucket(name).Stats()
		if st.BucketN > 1 {
			return fmt.Errorf("bucket %s holds %d nested bucket(s), which spyder never writes: the file is damaged or another program wrote to it", name, st.BucketN-1)
		}
		n[i] = int64(st.KeyN)
	}
	c := counts{pending: n[0], processing: n[1], dead: n[2], seen: n[3]}
	if readCounts(tx) == c && len(tx.Bucket(bucketMeta).Get(keyCounts)) == 32 {
		return nil
	}
	return writeCounts(tx, c)
}
