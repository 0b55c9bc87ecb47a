package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
)

// delivery is one batch the chaos endpoint accepted.
type delivery struct {
	id    string // batch_id
	probe string // probe_id: the probe that wrote it
	made  time.Time
	got   time.Time
	line  outLine
	// outcomes is each probed host's page outcome, as the probe
	// acknowledged it (spyder.HostOutcome.PageOutcome).
	outcomes map[string]string
}

// chaosEndpoint is the ingest endpoint of the chaos soak: it keeps every
// batch it accepts, and can go down (its listener and connections closed,
// so POSTs are refused) and come back on the same address.
type chaosEndpoint struct {
	t    *testing.T
	addr string

	mu    sync.Mutex
	srv   *http.Server
	got   []delivery
	bad   []string // bodies that were not a batch
	downs int
}

func startChaosEndpoint(t *testing.T) *chaosEndpoint {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("chaos endpoint: %v", err)
	}
	e := &chaosEndpoint{t: t, addr: ln.Addr().String()}
	e.serve(ln)
	t.Cleanup(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.srv != nil {
			e.srv.Close()
		}
	})
	return e
}

// URL is the endpoint's address, without a proxy between.
func (e *chaosEndpoint) URL() string { return "http://" + e.addr + "/ingest" }

func (e *chaosEndpoint) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(e.handle), ReadHeaderTimeout: 5 * time.Second}
	e.srv = srv
	go srv.Serve(ln)
}

func (e *chaosEndpoint) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.Method != http.MethodPost {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var b spyder.Batch
	if err := json.Unmarshal(body, &b); err != nil || b.BatchID == "" {
		e.mu.Lock()
		e.bad = append(e.bad, string(body[:min(len(body), 200)]))
		e.mu.Unlock()
		http.Error(w, "not a batch", http.StatusBadRequest)
		return
	}
	d := delivery{id: b.BatchID, probe: b.ProbeID, made: time.Unix(b.Timestamp, 0), got: time.Now(), line: batchKeys(&b),
		outcomes: map[string]string{}}
	for _, p := range b.Outcomes {
		d.outcomes[string(p.Host)] = p.PageOutcome()
	}
	e.mu.Lock()
	e.got = append(e.got, d)
	e.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// down closes the listener and every open connection: until up, a POST is
// refused.
func (e *chaosEndpoint) down() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil {
		e.srv.Close()
		e.srv = nil
		e.downs++
	}
}

// up listens again on the same address.
func (e *chaosEndpoint) up() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil {
		return nil
	}
	var err error
	for range 50 { // the old socket may linger a moment
		var ln net.Listener
		if ln, err = net.Listen("tcp", e.addr); err == nil {
			e.serve(ln)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// deliveries returns a copy of what the endpoint accepted so far.
func (e *chaosEndpoint) deliveries() []delivery {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]delivery(nil), e.got...)
}
