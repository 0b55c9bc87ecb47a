package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

//go:embed index.html
var page embed.FS

// Stats is the queue's snapshot as the API sends it.
type Stats struct {
	Pending        int64   `json:"pending"`
	Processing     int64   `json:"processing"`
	Dead           int64   `json:"dead"`
	Seen           int64   `json:"seen"`
	OldestLeaseAge float64 `json:"oldest_lease_age_seconds"`
}

// Queue returns s as a [queue.Stats].
func (s Stats) Queue() queue.Stats {
	return queue.Stats{Pending: s.Pending, Processing: s.Processing, Dead: s.Dead, Seen: s.Seen,
		OldestLeaseAge: time.Duration(s.OldestLeaseAge * float64(time.Second))}
}

// Dead is a dead item as the API sends it: Raw holds the stored bytes,
// and Host is empty when they did not decode.
type Dead struct {
	Host     string `json:"host,omitempty"`
	Attempts int    `json:"attempts"`
	Raw      string `json:"raw,omitempty"`
	Error    string `json:"error"`
	At       int64  `json:"at"` // Unix seconds
}

// Status is the answer of GET /api/status: the queue, this process, the
// last ten minutes of history, the live probes and the oldest dead items.
type Status struct {
	Queue    string            `json:"queue"`
	Fleet    bool              `json:"fleet"`
	Started  int64             `json:"started"` // Unix ms
	Now      int64             `json:"now"`     // Unix ms
	Stats    Stats             `json:"stats"`
	Done     int64             `json:"done"`
	Inflight int               `json:"inflight"`
	Limit    int               `json:"limit"`             // hosts this process may have in flight now
	LimitWhy string            `json:"limit_why"`         // why the limit is what it is
	Requeued int64             `json:"requeued_overload"` // visits handed back for overload
	Rate     float64           `json:"rate"`              // this process, hosts/s over the last minute
	RateAll  float64           `json:"rate_queue"`        // every probe, hosts/s over the last minute
	Outcomes map[string]int64  `json:"outcomes"`
	History  []Point           `json:"history"`
	Probes   []store.ProbeBeat `json:"probes"`
	// ProbesError says why the probe list could not be read, if it could not.
	ProbesError string `json:"probes_error,omitempty"`
	Dead        []Dead `json:"dead"`
}

// Limits of one status answer.
const (
	historySpan = 10 * time.Minute
	deadShown   = 50
)

// Handler serves the page at / and the API under /api/:
//
//	GET  /api/status            Status
//	GET  /api/dead?limit=N      []Dead, oldest first (N <= 0: all)
//	POST /api/dead/retry?limit=N {"retried": n}; needs Content-Type: application/json
//
// The retry needs a JSON content type so that a page of another site
// cannot make a browser send it (such a request needs a preflight that this
// server never answers).
func (b *Board) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		data, _ := page.ReadFile("index.html")
		w.Write(data)
	})
	mux.HandleFunc("GET /api/status", b.serveStatus)
	mux.HandleFunc("GET /api/dead", b.serveDead)
	mux.HandleFunc("POST /api/dead/retry", b.serveRetry)
	return mux
}

// Status builds the status answer: the queue now, and the history.
func (b *Board) Status(ctx context.Context) (Status, error) {
	st, err := b.q.Stats(ctx)
	if err != nil {
		return Status{}, err
	}
	// A probe list the store cannot read (a damaged key) leaves the rest
	// of the status standing.
	probes, perr := b.q.Probes(ctx)
	dead, err := b.dead(ctx, deadShown)
	if err != nil {
		return Status{}, err
	}
	p := b.proc()
	own, all := b.Rates()
	now := time.Now()
	return Status{
		Queue: b.name, Fleet: b.shared, Started: b.start.UnixMilli(), Now: now.UnixMilli(),
		Stats: Stats{Pending: st.Pending, Processing: st.Processing, Dead: st.Dead, Seen: st.Seen,
			OldestLeaseAge: st.OldestLeaseAge.Seconds()},
		Done: p.Done, Inflight: p.Inflight, Limit: p.Limit, LimitWhy: p.LimitWhy, Requeued: p.Requeued, Rate: own, RateAll: all, Outcomes: p.Outcomes,
		History: b.history(now, historySpan), Probes: probes, ProbesError: errText(perr), Dead: dead,
	}, nil
}

func (b *Board) dead(ctx context.Context, limit int) ([]Dead, error) {
	items, err := b.q.Dead(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Dead, 0, len(items))
	for _, d := range items {
		e := Dead{Raw: string(d.Raw), Error: d.Error, At: d.At}
		if d.Item != nil {
			e.Host, e.Attempts = string(d.Item.Host), d.Item.Attempt
		}
		out = append(out, e)
	}
	return out, nil
}

func (b *Board) serveStatus(w http.ResponseWriter, r *http.Request) {
	st, err := b.Status(r.Context())
	reply(w, st, err)
}

func (b *Board) serveDead(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	items, err := b.dead(r.Context(), limit)
	reply(w, items, err)
}

func (b *Board) serveRetry(w http.ResponseWriter, r *http.Request) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		http.Error(w, "retry needs Content-Type: application/json", http.StatusUnsupportedMediaType)
		return
	}
	limit, err := limitParam(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n, err := b.q.RetryDead(r.Context(), limit)
	reply(w, map[string]int{"retried": n}, err)
}

// limitParam reads ?limit=N (absent: 0, every item).
func limitParam(r *http.Request) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("limit %q is not a number", s)
	}
	return n, nil
}

// errText is err's message, or "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// reply writes v as JSON, or err as a 503: the store did not answer.
func reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		http.Error(w, "queue: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
