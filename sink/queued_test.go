package sink_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/boltstore"
)

// TestBatcher_QueuedTargetsWaitForTheirProbe: an edge target the queue
// holds to be probed gets no bare node; its own probe writes its node,
// with what it learned, once; a target not queued gets a bare node; a
// probed host whose probe found nothing still gets its node.
func TestBatcher_QueuedTargetsWaitForTheirProbe(t *testing.T) {
	q, err := boltstore.Open(filepath.Join(t.TempDir(), "spyder.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, err := q.Seed(t.Context(), []host.Name{"a.com", "b.com", "gone.com"}); err != nil {
		t.Fatal(err)
	}
	rec := &recordingSink{}
	b := sink.NewBatcher(rec, &store.MemoryEmitted{}, sink.BatcherConfig{RunID: "r", MaxResults: 1, MaxDelay: time.Millisecond, Queue: q})
	defer b.Close(context.Background())

	mustAdd(t, b, result("a.com", "b.com", "x.org", "gone.com"))
	mustAdd(t, b, result("b.com", "a.com", "x.org"))
	gone := &spyder.Result{Host: "gone.com", Outcome: spyder.HostOutcome{Host: "gone.com",
		Steps: []spyder.StepOutcome{{Step: "dns", Status: "nxdomain"}}}}
	mustAdd(t, b, gone)
	// Once b.com is done, a later reference finds its node written.
	if _, err := q.AckAll(t.Context(), nil, []queue.Visit{{Host: "b.com", At: 1, Outcome: "ok"}}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, b, result("c.com", "b.com"))

	want := [][]string{
		{"LINKS_TO a.com b.com", "LINKS_TO a.com gone.com", "LINKS_TO a.com x.org", "RESOLVES_TO a.com 192.0.2.1",
			"domain a.com txt of a.com", "domain x.org ", "ip 192.0.2.1", "probe a.com"},
		{"LINKS_TO b.com a.com", "LINKS_TO b.com x.org", "RESOLVES_TO b.com 192.0.2.1", "domain b.com txt of b.com", "probe b.com"},
		{"domain gone.com ", "probe gone.com"},
		{"LINKS_TO c.com b.com", "RESOLVES_TO c.com 192.0.2.1", "domain c.com txt of c.com", "probe c.com"},
	}
	var got [][]string
	for _, batch := range rec.all() {
		got = append(got, summary(batch))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
}
