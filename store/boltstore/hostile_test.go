package boltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/storetest"
)

// These tests write what spyder never writes into every bucket it owns, as
// another program, a bad disk or a hand edit could, and check that the
// store copes: undecodable items go to dead with the reason and their bytes,
// work goes on (Lease, Ack, Reclaim, Stats, Export, Dead), nothing else is
// lost; where "to dead" makes no sense (a broken bucket structure), one
// clear error names the bucket.

const hostileGood = 20 // good hosts seeded beside the garbage

var goodHosts = storetest.GoodHosts(hostileGood)

// openHostile opens the file mustHostileDB makes with inject, checks that
// its stats agree with its dump, and closes it when the test ends.
func openHostile(t *testing.T, inject func(tx *bbolt.Tx) error) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(mustHostileDB(t, inject), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatalf("Open() error: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	checkStatsMatchDump(t, s)
	return s
}

// mustHostileDB seeds the good hosts into a new file, lets inject write to
// it through bbolt directly (the store closed, as another program would)
// and returns its path.
func mustHostileDB(tb testing.TB, inject func(tx *bbolt.Tx) error) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "spyder.db")
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Seed(context.Background(), storetest.Names(tb, goodHosts...)); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Spool(); err != nil {
		tb.Fatal(err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(inject); err != nil {
		tb.Fatalf("inject: %v", err)
	}
	return path
}

// appendTo puts v in bucket b under the next sequence key, as spyder
// appends, or under key when it is set.
func appendTo(b string, key, v []byte) func(tx *bbolt.Tx) error {
	return func(tx *bbolt.Tx) error {
		bk := tx.Bucket([]byte(b))
		if key == nil {
			seq, err := bk.NextSequence()
			if err != nil {
				return err
			}
			key = binary.BigEndian.AppendUint64(nil, 1<<63+seq)
		}
		return bk.Put(key, v)
	}
}

// procRecord is a processing value: deadline and start (Unix ns), then raw.
func procRecord(deadline time.Time, raw []byte) []byte {
	v := binary.BigEndian.AppendUint64(nil, uint64(deadline.UnixNano()))
	v = binary.BigEndian.AppendUint64(v, uint64(time.Now().UnixNano()))
	return append(v, raw...)
}

// checkStatsMatchDump checks that Stats agrees with what Dump holds, and
// that Export writes every record and imports. A processing record no worker can hold
// (it does not decode) is dumped as a raw pending record but counted as
// processing until Reclaim sends it to dead.
func checkStatsMatchDump(tb testing.TB, s *boltstore.Store) queue.Stats {
	tb.Helper()
	ctx := context.Background()
	var n [4]int64
	raw := int64(0)
	err := s.Dump(ctx, func(r queue.Record) error {
		n[map[string]int{queue.KindPending: 0, queue.KindProcessing: 1, queue.KindDead: 2, queue.KindSeen: 3}[r.Kind]]++
		if r.Kind == queue.KindPending && r.Item == nil {
			raw++
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("Dump() error: %v", err)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		tb.Fatalf("Stats() error: %v", err)
	}
	if moved := st.Processing - n[1]; moved >= 0 && moved <= raw {
		n[0], n[1] = n[0]-moved, st.Processing
	}
	if got := [4]int64{st.Pending, st.Processing, st.Dead, st.Seen}; got != n {
		tb.Errorf("Stats() = %v, want %v as dumped", got, n)
	}
	if lines := storetest.ExportImports(tb, s); lines != n[0]+n[1]+n[2]+n[3] {
		tb.Errorf("Export() wrote %d lines, want %d", lines, n[0]+n[1]+n[2]+n[3])
	}
	return st
}

// TestStore_HostileItems puts undecodable items in pending and processing:
// each goes to dead with the reason and its bytes, every good host is
// leased and acked once, and the queue's other calls keep working.
func TestStore_HostileItems(t *testing.T) {
	t.Parallel()
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	type test struct {
		name     string
		inject   func(tx *bbolt.Tx) error
		dead     []byte   // the bytes that must end in dead, whole
		reason   string   // part of the dead item's error
		moreGood []string // decodable hosts the garbage came with
	}
	var tests []test
	for _, h := range storetest.HostileItems() {
		tt := test{name: "Pending" + h.Name, inject: appendTo("pending", nil, h.Raw), reason: h.Reason}
		if h.Reason != "" {
			tt.dead = h.Raw
		} else {
			tt.moreGood = []string{h.Host}
		}
		tests = append(tests, tt)
	}
	tests = append(tests, []test{
		{"PendingShortKeyAtFront", appendTo("pending", []byte("a"), []byte(`{"host":"front.example.com","ts":1,"attempt":0}`)), nil, "", []string{"front.example.com"}},
		{"PendingLongKeyAtBack", appendTo("pending", bytes.Repeat([]byte{0xff}, 40), []byte(`{"host":"back.example.com","ts":1,"attempt":0}`)), nil, "", []string{"back.example.com"}},
		{"ProcessingShortRecord", appendTo("processing", []byte("zzzz"), []byte("abc")), []byte("abc"), "corrupt processing record", nil},
		{"ProcessingEmptyRecord", appendTo("processing", []byte("zzzz"), []byte{}), []byte{}, "corrupt processing record", nil},
		{"ProcessingGarbageItemNotExpired", appendTo("processing", []byte("0000000000000099"), procRecord(future, []byte("not json"))), []byte("not json"), "undecodable item", nil},
		{"ProcessingGarbageItemExpired", appendTo("processing", []byte("0000000000000099"), procRecord(past, []byte(`{"host":[]}`))), []byte(`{"host":[]}`), "undecodable item", nil},
		{"ProcessingOddKeyExpired", appendTo("processing", []byte("k"), procRecord(past, []byte(`{"host":"odd.example.com","ts":1,"attempt":0}`))), nil, "", []string{"odd.example.com"}},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openHostile(t, tt.inject)
			acked := storetest.Drain(t, s)
			storetest.CheckDrained(t, s, acked, goodHosts, tt.moreGood, tt.dead, tt.reason)
			st := checkStatsMatchDump(t, s)
			if st.Pending != 0 || st.Processing != 0 {
				t.Errorf("Stats() after draining = %+v, want nothing pending or processing", st)
			}
		})
	}
}

// TestStore_HostileRecords puts broken records in dead, seen and the
// counts: every call still works, and the broken bytes are kept.
func TestStore_HostileRecords(t *testing.T) {
	t.Parallel()
	deadHeader := func(reasonLen uint32, rest string) []byte {
		v := binary.BigEndian.AppendUint64(nil, uint64(time.Now().Unix()))
		v = binary.BigEndian.AppendUint32(v, reasonLen)
		return append(v, rest...)
	}
	tests := []struct {
		name   string
		inject func(tx *bbolt.Tx) error
		check  func(t *testing.T, s *boltstore.Store)
	}{
		{"DeadShortRecord", appendTo("dead", []byte("k"), []byte("xy")), wantDeadRaw("xy", "corrupt dead record")},
		{"DeadReasonPastEnd", appendTo("dead", nil, deadHeader(1<<20, "why")), wantDeadRaw(string(deadHeader(1<<20, "why")), "corrupt dead record")},
		{"DeadGarbageItem", appendTo("dead", nil, deadHeader(3, "why\xff\x00")), wantDeadRaw("\xff\x00", "why")},
		{"SeenGarbage", appendTo("seen", []byte("\xff\xfe not a host"), []byte("junk")), func(t *testing.T, s *boltstore.Store) {
			if st := checkStatsMatchDump(t, s); st.Seen != hostileGood+1 {
				t.Errorf("Stats().Seen = %d, want %d", st.Seen, hostileGood+1)
			}
		}},
		{"CountsWrongLength", appendTo("queue-meta", []byte("counts"), []byte("xyz")), func(t *testing.T, s *boltstore.Store) {
			if st := checkStatsMatchDump(t, s); st.Pending != hostileGood {
				t.Errorf("Stats().Pending = %d, want %d", st.Pending, hostileGood)
			}
		}},
		{"CountsWrong", appendTo("queue-meta", []byte("counts"), bytes.Repeat([]byte{0xff}, 32)), func(t *testing.T, s *boltstore.Store) {
			if st := checkStatsMatchDump(t, s); st.Pending != hostileGood {
				t.Errorf("Stats().Pending = %d, want %d", st.Pending, hostileGood)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := openHostile(t, tt.inject)
			tt.check(t, s)
			acked := storetest.Drain(t, s)
			if len(acked) != hostileGood {
				t.Errorf("acked %d hosts, want %d", len(acked), hostileGood)
			}
			if _, err := s.RetryDead(context.Background(), 0); err != nil {
				t.Errorf("RetryDead() error: %v", err)
			}
			storetest.Drain(t, s)
			if _, err := s.PurgeDead(context.Background()); err != nil {
				t.Errorf("PurgeDead() error: %v", err)
			}
			checkStatsMatchDump(t, s)
		})
	}
}

// wantDeadRaw checks that the one dead item holds raw, whole, and an error
// saying reason.
func wantDeadRaw(raw, reason string) func(t *testing.T, s *boltstore.Store) {
	return func(t *testing.T, s *boltstore.Store) {
		t.Helper()
		dead, err := s.Dead(context.Background(), 0)
		if err != nil {
			t.Fatalf("Dead() error: %v", err)
		}
		if len(dead) != 1 {
			t.Fatalf("Dead() = %d items, want 1", len(dead))
		}
		if string(dead[0].Raw) != raw && !strings.HasSuffix(raw, string(dead[0].Raw)) {
			t.Errorf("dead item bytes = %q, want %q", dead[0].Raw[:min(len(dead[0].Raw), 40)], raw[:min(len(raw), 40)])
		}
		if !strings.Contains(dead[0].Error, reason) {
			t.Errorf("dead item error = %q, want it to say %q", dead[0].Error, reason)
		}
	}
}

// TestStore_Release_HostileFrontKey: items handed back go before every
// pending key, whatever its length; none overwrites another.
func TestStore_Release_HostileFrontKey(t *testing.T) {
	t.Parallel()
	for name, keys := range map[string][][]byte{
		"Short":      {[]byte("a")},
		"Zero":       {make([]byte, 8)},
		"ZeroAndMax": {make([]byte, 8), bytes.Repeat([]byte{0xff}, 8)},
		"ZeroShort":  {{0}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "spyder.db")
			s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			s.Seed(ctx, storetest.Names(t, goodHosts[0]))
			ls, err := s.Lease(ctx, 1, time.Hour, 0)
			if err != nil || len(ls) != 1 {
				t.Fatalf("Lease() = %v, %v", ls, err)
			}
			s.Close()
			db, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bbolt.Tx) error {
				for i, k := range keys {
					v := fmt.Appendf(nil, `{"host":"k%d.example.com","ts":1,"attempt":0}`, i)
					if err := tx.Bucket([]byte("pending")).Put(k, v); err != nil {
						return err
					}
				}
				return nil
			})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			s, err = boltstore.Open(path, boltstore.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if n, err := s.Release(ctx, ls); err != nil || n != 1 {
				t.Fatalf("Release() = %d, %v; want 1, nil", n, err)
			}
			acked := storetest.Drain(t, s)
			if len(acked) != 1+len(keys) {
				t.Errorf("acked %v, want %s and the %d injected items", acked, goodHosts[0], len(keys))
			}
			checkStatsMatchDump(t, s)
		})
	}
}

// TestStore_HostileStructure nests a bucket where spyder keeps only values:
// the store refuses the file at Open with one error naming the bucket,
// rather than failing every Lease or looping over a key it cannot delete.
func TestStore_HostileStructure(t *testing.T) {
	t.Parallel()
	for _, b := range []string{"pending", "processing", "dead", "seen"} {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			path := mustHostileDB(t, func(tx *bbolt.Tx) error {
				_, err := tx.Bucket([]byte(b)).CreateBucket([]byte("nested"))
				return err
			})
			s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
			if err == nil {
				s.Close()
				t.Fatalf("Open() of a file with a bucket nested in %s = nil error, want one", b)
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "bucket "+b) || !strings.Contains(msg, "nested") {
				t.Errorf("Open() error = %q, want it to name %s, bucket %s and the nested bucket", msg, path, b)
			}
		})
	}
}

// TestSpool_Hostile: a spool entry under a key spyder does not write can
// still be peeked and removed, so it cannot block the spool; a nested
// bucket in the spool is refused with an error naming it.
func TestSpool_Hostile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := mustHostileDB(t, func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("spool"))
		if err := b.Put([]byte("abc"), []byte("not json")); err != nil {
			return err
		}
		return b.Put(binary.BigEndian.AppendUint64(nil, 7), []byte(`{"batch":7}`))
	})
	s := mustOpenAt(t, path, boltstore.Options{NoSync: true})
	sp, err := s.Spool()
	if err != nil {
		t.Fatalf("Spool() error: %v", err)
	}
	var got []string
	for range 3 {
		id, data, err := sp.Peek(ctx)
		if err != nil {
			t.Fatalf("Peek() error: %v", err)
		}
		if id == "" {
			break
		}
		got = append(got, string(data))
		if err := sp.Remove(ctx, id); err != nil {
			t.Fatalf("Remove(%q) error: %v", id, err)
		}
	}
	if want := []string{`{"batch":7}`, "not json"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("spool gave %q, want %q", got, want)
	}
	if n, err := sp.Len(ctx); err != nil || n != 0 {
		t.Errorf("Len() = %d, %v; want 0", n, err)
	}
	if err := sp.Remove(ctx, hex.EncodeToString([]byte("gone"))); err != nil {
		t.Errorf("Remove() of an entry already gone: %v", err)
	}
	if err := sp.Remove(ctx, "not hex"); err == nil {
		t.Error("Remove(\"not hex\") = nil error, want one")
	}
	err = s.DB().Update(func(tx *bbolt.Tx) error {
		_, err := tx.Bucket([]byte("spool")).CreateBucket([]byte("nested"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Spool(); err == nil || !strings.Contains(err.Error(), "bucket spool") {
		t.Errorf("Spool() with a nested bucket = %v, want an error naming bucket spool", err)
	}
}

// TestEmitted_Hostile: a value where spyder keeps a run's bucket is refused
// when the emitted set is opened, naming the bucket and the run, instead of
// failing every batch of that run (and sending every host to dead).
func TestEmitted_Hostile(t *testing.T) {
	t.Parallel()
	path := mustHostileDB(t, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("emitted"))
		if err != nil {
			return err
		}
		return b.Put([]byte("default"), []byte("not a bucket"))
	})
	_, err := mustOpenAt(t, path, boltstore.Options{NoSync: true}).Emitted()
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "bucket emitted") || !strings.Contains(err.Error(), `"default"`) {
		t.Errorf("Emitted() = %v, want an error naming %s, bucket emitted and the run", err, path)
	}
}
