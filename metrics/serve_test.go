package metrics_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/metrics"
)

// TestServe_HealthAndRoot: /healthz follows the health function (200, then
// 503 with its reason), /metrics serves the series, and every other path
// goes to the root handler. The concurrency limit, why it moved and the
// visits requeued for overload are among the series.
func TestServe_HealthAndRoot(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var lost atomic.Bool
	health := func(context.Context) error {
		if lost.Load() {
			return errors.New("the queue lost its state")
		}
		return nil
	}
	root := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "dashboard "+r.URL.Path) })
	m := metrics.New(nil)
	m.SetLimit(640, 335*time.Millisecond)
	m.NoteLimitMove("saturated")
	m.RequeuedOverload.Add(12)
	stop, err := m.Serve(t.Context(), addr, health, root, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q, want 200", code, body)
	}
	lost.Store(true)
	if code, body := get("/healthz"); code != 503 || !strings.Contains(body, "lost its state") {
		t.Errorf("/healthz after the loss = %d %q, want 503 with the reason", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "spyder_acked_total") {
		t.Errorf("/metrics = %d, lacks spyder_acked_total", code)
	}
	_, body := get("/metrics")
	for _, want := range []string{"spyder_concurrency_limit 640", `spyder_concurrency_limit_moves_total{cause="saturated"} 1`,
		"spyder_scheduler_latency_p99_seconds 0.335", "spyder_requeued_overload_total 12"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if code, body := get("/api/status"); code != 200 || body != "dashboard /api/status" {
		t.Errorf("/api/status = %d %q, want the root handler", code, body)
	}
}
