package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/storetest"
)

func TestOpen_NotABoltFile(t *testing.T) {
	for name, content := range map[string][]byte{
		"text":  []byte("a.com\nb.com\n"),
		"large": bytes.Repeat([]byte("not a database, just a long file\n"), 4096),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hosts.txt")
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := boltstore.Open(path, boltstore.Options{})
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) = nil error, want one", name)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a bbolt database") {
				t.Errorf("Open() error = %q, want it to name %s and say it is not a bbolt database", err, path)
			}
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, content) {
				t.Errorf("Open() changed the file it rejected")
			}
		})
	}
}

func TestOpen_LockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spyder.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatalf("Open() error: %v", err)
	}
	defer s.Close()
	start := time.Now()
	s2, err := boltstore.Open(path, boltstore.Options{Timeout: 100 * time.Millisecond})
	if err == nil {
		s2.Close()
		t.Fatal("second Open() of a locked file = nil error, want one")
	}
	if !errors.Is(err, bbolt.ErrTimeout) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "locked") {
		t.Errorf("second Open() error = %q, want a timeout naming %s as locked", err, path)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second Open() took %v, want about the 100ms timeout", d)
	}
}

func TestOpen_EmptyFileBecomesStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spyder.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatalf("Open(empty file) error: %v", err)
	}
	s.Close()
}

func TestStore_ReopenKeepsOrderAndLeaseIDs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "spyder.db")
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Seed(ctx, []host.Name{"a.com", "b.com"})
	first, _ := s.Lease(ctx, 1, time.Hour, 0)
	s.Close()

	s, err = boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if res, _ := s.Seed(ctx, []host.Name{"a.com", "c.com"}); res.Added != 1 || res.Duplicate != 1 {
		t.Errorf("Seed() after reopen = %+v, want a.com still seen", res)
	}
	ls, err := s.Lease(ctx, 10, time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, l := range ls {
		hosts = append(hosts, string(l.Item.Host))
		if l.ID == first[0].ID {
			t.Errorf("lease ID %q reused after reopen", l.ID)
		}
	}
	if diff := cmp.Diff([]string{"b.com", "c.com"}, hosts); diff != "" {
		t.Errorf("Lease() after reopen (-want +got):\n%s", diff)
	}
	if err := storetest.Ack(ctx, s, first[0]); err != nil {
		t.Errorf("Ack() of a lease taken before reopen: %v", err)
	}
}

func TestStore_ReclaimUsesNow(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1705312200, 0)
	s := MustOpen(t, boltstore.Options{NoSync: true, Now: func() time.Time { return now }})
	s.Seed(ctx, []host.Name{"a.com"})
	ls, _ := s.Lease(ctx, 1, time.Minute, 0)
	if want := now.Add(time.Minute); !ls[0].Deadline.Equal(want) || ls[0].Item.TS != now.Unix() {
		t.Errorf("lease deadline %v, ts %d; want %v, %d", ls[0].Deadline, ls[0].Item.TS, want, now.Unix())
	}
	now = now.Add(59 * time.Second)
	if st, _ := s.Stats(ctx); st.OldestLeaseAge != 59*time.Second {
		t.Errorf("Stats().OldestLeaseAge = %v, want 59s", st.OldestLeaseAge)
	}
	if r, _ := s.Reclaim(ctx, time.Minute, 3); len(r.Requeued) != 0 {
		t.Errorf("Reclaim() before the deadline = %+v, want nothing", r)
	}
	now = now.Add(2 * time.Second)
	if r, _ := s.Reclaim(ctx, time.Minute, 3); !cmp.Equal(r.Requeued, []string{"a.com"}) {
		t.Errorf("Reclaim() after the deadline = %+v, want a.com requeued", r)
	}
}

func TestStore_ReleaseGoesToFront(t *testing.T) {
	ctx := context.Background()
	s := MustOpen(t, boltstore.Options{NoSync: true})
	s.Seed(ctx, []host.Name{"a.com", "b.com", "c.com", "d.com"})
	ls, _ := s.Lease(ctx, 2, time.Hour, 0)
	if n, err := s.Release(ctx, ls); n != 2 || err != nil {
		t.Fatalf("Release() = %d, %v", n, err)
	}
	ls, _ = s.Lease(ctx, 4, time.Hour, 0)
	var hosts []string
	for _, l := range ls {
		hosts = append(hosts, string(l.Item.Host))
	}
	if diff := cmp.Diff([]string{"a.com", "b.com", "c.com", "d.com"}, hosts); diff != "" {
		t.Errorf("Lease() after Release (-want +got):\n%s", diff)
	}
}

// TestStore_ExportByteIdentical: bbolt keeps every order, so a file exported,
// imported and exported again is the same bytes.
func TestStore_ExportByteIdentical(t *testing.T) {
	ctx := context.Background()
	file := strings.Join([]string{
		`{"kind":"pending","item":{"host":"a.com","ts":1,"attempt":0,"x":{"y":[1,"<&>"]}}}`,
		`{"kind":"pending","raw":"not an item"}`,
		`{"kind":"pending","item":{"host":"b.com","ts":2,"attempt":1}}`,
		`{"kind":"processing","item":{"host":"c.com","ts":3,"attempt":0},"lease":"redis-lease-1","deadline":1705312320123}`,
		`{"kind":"processing","item":{"host":"d.com","ts":3,"attempt":2},"lease":"redis-lease-2","deadline":1705312320124}`,
		`{"kind":"dead","item":{"host":"e.com","ts":4,"attempt":3},"error":"tls: \"bad\" cert","at":1705312200}`,
		`{"kind":"dead","raw":"{\"host\":1}","error":"undecodable","at":1705312201}`,
		`{"kind":"dead","raw_base64":"/wA=","error":"","at":1705312202}`,
		`{"kind":"seen","host":"a.com"}`,
		`{"kind":"seen","host":"b.com"}`,
	}, "\n") + "\n"
	s := MustOpen(t, boltstore.Options{NoSync: true})
	if n, err := queue.Import(ctx, s, strings.NewReader(file)); err != nil || n != 10 {
		t.Fatalf("Import() = %d, %v; want 10, nil", n, err)
	}
	var out bytes.Buffer
	if err := queue.Export(ctx, s, &out); err != nil {
		t.Fatalf("Export() error: %v", err)
	}
	if diff := cmp.Diff(file, out.String()); diff != "" {
		t.Errorf("export after import (-imported +exported):\n%s", diff)
	}
}

func TestStore_LoadIgnoresOtherBuckets(t *testing.T) {
	ctx := context.Background()
	s := MustOpen(t, boltstore.Options{NoSync: true})
	err := s.DB().Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("test-other"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Load(ctx, []queue.Record{{Kind: queue.KindSeen, Host: "a.com"}}); err != nil {
		t.Errorf("Load() with only another package's bucket in the file: %v", err)
	}
}
