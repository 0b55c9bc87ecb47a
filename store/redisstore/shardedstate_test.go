package redisstore_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/boltstore"
)

// mustFillState gives q hosts of many sites in every state: 300 seeded,
// 40 done (with their probes), 20 dead, 30 in flight and the rest pending.
func mustFillState(t *testing.T, q queue.Queue) {
	t.Helper()
	ctx := context.Background()
	hosts := make([]host.Name, 300)
	for i := range hosts {
		hosts[i] = host.Name(fmt.Sprintf("h%d.site%d.com", i, i%97))
	}
	if _, err := q.Seed(ctx, hosts); err != nil {
		t.Fatalf("Seed() error: %v", err)
	}
	ls, err := q.Lease(ctx, 90, time.Hour, time.Second)
	for len(ls) < 90 && err == nil {
		var more []queue.Lease
		more, err = q.Lease(ctx, 90-len(ls), time.Hour, time.Second)
		ls = append(ls, more...)
	}
	if err != nil {
		t.Fatalf("Lease(90) error: %v", err)
	}
	var ps []queue.Visit
	for _, l := range ls[:40] {
		ps = append(ps, queue.Visit{Host: l.Item.Host, At: 1_705_312_200, Outcome: "ok"})
	}
	ok, err := q.AckAll(ctx, ls[:40], ps)
	if err != nil || slices.Contains(ok, false) {
		t.Fatalf("AckAll(40) = %v, %v; want all acked", ok, err)
	}
	for _, l := range ls[40:60] {
		if err := q.Fail(ctx, l, "down", 1); err != nil {
			t.Fatalf("Fail() error: %v", err)
		}
	}
	st, err := q.Stats(ctx)
	if err != nil || st.Pending != 210 || st.Processing != 30 || st.Dead != 20 || st.Seen != 300 {
		t.Fatalf("Stats() = %+v, %v; want 210 pending, 30 processing, 20 dead, 300 seen", st, err)
	}
}

// mustExport exports q and returns its lines sorted (pending order differs
// between shard counts; each record must survive).
func mustExport(t *testing.T, q queue.Queue) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := queue.Export(context.Background(), q, &buf); err != nil {
		t.Fatalf("Export() error: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	slices.Sort(lines)
	return lines
}

func mustImport(t *testing.T, q queue.Queue, lines []string) {
	t.Helper()
	n, err := queue.Import(context.Background(), q, strings.NewReader(strings.Join(lines, "\n")+"\n"))
	if err != nil || n != len(lines) {
		t.Fatalf("Import() = %d, %v; want %d records", n, err, len(lines))
	}
}

// TestSharded_ExportImportAcrossShardCounts: a queue exported from 64
// shards on a cluster imports losslessly into 5 shards on one server, into
// bbolt, and back into 64 shards on the cluster: every line of every export
// is the same, lease IDs included, and a lease held in the first queue can
// be acked in the last.
func TestSharded_ExportImportAcrossShardCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first := MustOpenSharded(t, MustClusterClient(t), "", 64)
	mustFillState(t, first)
	want := mustExport(t, first)
	if len(want) != 210+30+20+300 {
		t.Fatalf("export has %d lines, want 560", len(want))
	}
	five := MustOpenSharded(t, MustClient(t), "", 5)
	mustImport(t, five, want)
	if diff := cmp.Diff(want, mustExport(t, five)); diff != "" {
		t.Fatalf("64 shards → 5 shards (-first +five):\n%s", diff)
	}
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "q.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	mustImport(t, bolt, mustExport(t, five))
	if diff := cmp.Diff(want, mustExport(t, bolt)); diff != "" {
		t.Fatalf("5 shards → bbolt (-first +bolt):\n%s", diff)
	}
	last := MustOpenSharded(t, MustClusterClient(t), "", 64)
	mustImport(t, last, mustExport(t, bolt))
	if diff := cmp.Diff(want, mustExport(t, last)); diff != "" {
		t.Fatalf("bbolt → 64 shards (-first +last):\n%s", diff)
	}
	held, err := first.Lease(ctx, 1, time.Hour, 0)
	if err != nil || len(held) != 1 {
		t.Fatalf("Lease(1) = %v, %v", held, err)
	}
	// A lease taken before the moves (now in every copy's export too).
	var inFlight queue.Lease
	first.Dump(ctx, func(r queue.Record) error {
		if r.Kind == queue.KindProcessing && r.LeaseID != held[0].ID && inFlight.ID == "" {
			inFlight = queue.Lease{Item: *r.Item, Raw: r.Item.Encode(), ID: r.LeaseID}
		}
		return nil
	})
	if ok, err := last.AckAll(ctx, []queue.Lease{inFlight}, nil); err != nil || !ok[0] {
		t.Errorf("AckAll(lease from the first queue) in the last = %v, %v; want acked", ok, err)
	}
}
