package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/dashboard"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/boltstore"
)

// TestBoard_RatesOverTheLastMinute: rates come from the history, over the
// last minute only, so an early burst stops counting once it is older.
func TestBoard_RatesOverTheLastMinute(t *testing.T) {
	var done int64
	b := dashboard.New(nil, "q", false, time.Unix(0, 0), func() dashboard.Process { return dashboard.Process{Done: done} })
	t0 := time.Unix(1000, 0)
	// 1,000 hosts in the first 10 s, then 1 host/s for 100 s.
	for s := 0; s <= 110; s++ {
		if s <= 10 {
			done = int64(s * 100)
		} else {
			done = 1000 + int64(s-10)
		}
		seen := int64(5000)
		b.Record(t0.Add(time.Duration(s)*time.Second), queue.Stats{Seen: seen, Pending: seen - done})
		if s == 10 {
			if own, all := b.Rates(); own != 100 || all != 100 {
				t.Errorf("rates after 10 s = %v, %v; want 100, 100", own, all)
			}
		}
	}
	if own, all := b.Rates(); own != 1 || all != 1 {
		t.Errorf("rates after the burst left the window = %v, %v; want 1, 1", own, all)
	}
}

// TestHandler_StatusDeadRetry serves the API over a real bbolt queue: the
// status counts, the dead list with its errors, and a retry that moves
// the dead items back to pending, refused without a JSON content type.
func TestHandler_StatusDeadRetry(t *testing.T) {
	ctx := t.Context()
	q, err := boltstore.Open(filepath.Join(t.TempDir(), "spyder.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, err := q.Seed(ctx, []host.Name{"a.com", "b.com", "c.com"}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Lease(ctx, 2, time.Minute, 0)
	if err != nil || len(ls) != 2 {
		t.Fatalf("Lease = %v, %v", ls, err)
	}
	for _, l := range ls {
		if err := q.Fail(ctx, l, "out of disk on "+string(l.Item.Host), 1); err != nil {
			t.Fatal(err)
		}
	}
	b := dashboard.New(q, "test.db", false, time.Now(), func() dashboard.Process {
		return dashboard.Process{Done: 7, Inflight: 1, Outcomes: map[string]int64{"ok": 7},
			Limit: 640, LimitWhy: "saturated: scheduler latency p99 335.5ms > 250.0ms", Requeued: 12}
	})
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()

	var st dashboard.Status
	getJSON(t, srv.URL+"/api/status", &st)
	if st.Stats.Pending != 1 || st.Stats.Dead != 2 || st.Stats.Seen != 3 || st.Done != 7 || st.Outcomes["ok"] != 7 || st.Queue != "test.db" {
		t.Errorf("status = %+v", st)
	}
	if st.Limit != 640 || !strings.HasPrefix(st.LimitWhy, "saturated:") || st.Requeued != 12 {
		t.Errorf("status limit %d (%q), requeued %d; want 640, saturated, 12", st.Limit, st.LimitWhy, st.Requeued)
	}
	if len(st.Dead) != 2 || st.Dead[0].Host != "a.com" || !strings.Contains(st.Dead[0].Error, "out of disk on a.com") || st.Dead[0].Attempts != 1 {
		t.Errorf("status dead = %+v, want a.com and b.com with their errors", st.Dead)
	}
	var dead []dashboard.Dead
	getJSON(t, srv.URL+"/api/dead?limit=1", &dead)
	if len(dead) != 1 || dead[0].Host != "a.com" {
		t.Errorf("/api/dead?limit=1 = %+v, want a.com only", dead)
	}

	resp, err := http.Post(srv.URL+"/api/dead/retry", "text/plain", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("retry as text/plain = %d, want 415 (a cross-site form must not retry)", resp.StatusCode)
	}
	resp, err = http.Post(srv.URL+"/api/dead/retry", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Retried int }
	json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if res.Retried != 2 {
		t.Errorf("retry = %+v, want 2 retried", res)
	}
	qs, _ := q.Stats(ctx)
	if qs.Dead != 0 || qs.Pending != 3 {
		t.Errorf("after retry: %+v, want 3 pending, 0 dead", qs)
	}

	resp, err = http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET / = %d %s, want the page", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
