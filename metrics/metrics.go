// Package metrics holds the Prometheus series a run exports on
// --metrics-addr, and the HTTP server of /metrics and /healthz. The run
// loop, the sinks and the command line all count into one [Set].
package metrics

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/limiter"
	"github.com/spyder-crawler/spyder/queue"
)

// Set is the series of one run. Each Set has its own registry, so tests can
// run several runs in one process.
type Set struct {
	reg *prometheus.Registry

	hosts       *prometheus.CounterVec // by page outcome
	edges       *prometheus.CounterVec // by type
	queue       *prometheus.GaugeVec   // by state
	leaseAge    prometheus.Gauge
	Inflight    prometheus.Gauge   // hosts being probed or written
	Leased      prometheus.Counter // items leased
	Acked       prometheus.Counter // hosts finished and acknowledged
	Failed      prometheus.Counter // hosts handed back through Fail
	Dead        prometheus.Counter // items sent to dead
	Reclaimed   prometheus.Counter // expired leases returned to the queue
	LeaseLost   prometheus.Counter // acks refused: the lease had expired
	Discovered  prometheus.Counter // discovered hosts queued
	batches     prometheus.Counter
	SinkRetries prometheus.Counter // ingest POSTs retried
	Spooled     prometheus.Counter // batches spooled for ingest
	Replayed    prometheus.Counter // spooled batches delivered later
	SpoolDepth  prometheus.Gauge   // batches waiting in the spool

	RequeuedOverload prometheus.Counter // visits handed back: timed out while saturated
	limit            prometheus.Gauge
	limitMoves       *prometheus.CounterVec // by cause
	schedP99         prometheus.Gauge
}

// SetLimit records the concurrency limit after a reading, with the
// scheduler latency's 99th percentile read then.
func (m *Set) SetLimit(limit int, sched time.Duration) {
	m.limit.Set(float64(limit))
	m.schedP99.Set(sched.Seconds())
}

// NoteLimitMove counts a move of the concurrency limit, for cause (a word:
// healthy, saturated, memory).
func (m *Set) NoteLimitMove(cause string) { m.limitMoves.WithLabelValues(cause).Inc() }

// New returns a Set whose registry also reports lim's waits (lim may be
// nil) and the Go runtime and process series.
func New(lim limiter.Limiter) *Set {
	m := &Set{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "spyder", Name: name, Help: help})
		f(c)
		return c
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "spyder", Name: name, Help: help})
		f(g)
		return g
	}
	m.hosts = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "spyder", Name: "hosts_total",
		Help: "Hosts probed and written, by how their page step ended (ok, nxdomain, timeout, robots_blocked, http_503, ...)."}, []string{"outcome"})
	m.edges = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "spyder", Name: "edges_total",
		Help: "Edges written (after the run's deduplication), by type."}, []string{"type"})
	m.queue = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "spyder", Name: "queue_items",
		Help: "Queue sizes by state (pending, processing, dead, seen), polled every second."}, []string{"state"})
	m.limitMoves = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "spyder", Name: "concurrency_limit_moves_total",
		Help: "Moves of the concurrency limit, by cause: healthy (grown), saturated or memory (cut)."}, []string{"cause"})
	f(m.limitMoves)
	f(m.hosts)
	f(m.edges)
	f(m.queue)
	m.leaseAge = gauge("queue_oldest_lease_age_seconds", "Age of the oldest lease in the queue (any worker).")
	m.Inflight = gauge("inflight_hosts", "Hosts this process is probing or writing now.")
	m.limit = gauge("concurrency_limit", "Hosts this process may have in flight now (adapted unless --fixed-concurrency).")
	m.schedP99 = gauge("scheduler_latency_p99_seconds", "The Go scheduler's latency (99th percentile) over the limit's last reading: how long a runnable goroutine waited for a CPU.")
	m.RequeuedOverload = counter("requeued_overload_total", "Visits that timed out while this process was saturated, handed back to the queue without spending an attempt.")
	m.Leased = counter("leased_total", "Items this process leased.")
	m.Acked = counter("acked_total", "Hosts this process finished and acknowledged.")
	m.Failed = counter("failed_total", "Hosts handed back through Fail (their output could not be written).")
	m.Dead = counter("dead_total", "Items this process sent to dead (attempts exhausted).")
	m.Reclaimed = counter("leases_reclaimed_total", "Expired leases this process returned to the queue.")
	m.LeaseLost = counter("leases_lost_total", "Acks refused because the lease had expired and was reclaimed.")
	m.Discovered = counter("discovered_enqueued_total", "Discovered hosts enqueued (--continuous).")
	m.batches = counter("sink_batches_total", "Output batches made durable by the sink.")
	m.SinkRetries = counter("sink_retries_total", "Ingest POSTs retried after a failure.")
	m.Spooled = counter("sink_spooled_total", "Batches spooled on disk because the ingest endpoint failed.")
	m.Replayed = counter("sink_replayed_total", "Spooled batches delivered later.")
	m.SpoolDepth = gauge("sink_spool_depth", "Batches waiting in the spool.")
	if lim != nil {
		f(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "spyder", Name: "limiter_waits_total",
			Help: "Requests that had to wait for the per-host rate limiter."}, func() float64 { return float64(lim.Stats().Waits) }))
	}
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Register adds c's series to the set, as they stand at each scrape (a
// DNS client's counters, say). Register a collector once per Set.
func (m *Set) Register(c prometheus.Collector) {
	m.reg.MustRegister(c)
}

// ObserveQueue records a queue snapshot.
func (m *Set) ObserveQueue(st queue.Stats) {
	m.queue.WithLabelValues("pending").Set(float64(st.Pending))
	m.queue.WithLabelValues("processing").Set(float64(st.Processing))
	m.queue.WithLabelValues("dead").Set(float64(st.Dead))
	m.queue.WithLabelValues("seen").Set(float64(st.Seen))
	m.leaseAge.Set(st.OldestLeaseAge.Seconds())
}

// ObserveBatch counts what a batch the sink made durable held.
func (m *Set) ObserveBatch(b *spyder.Batch) {
	m.batches.Inc()
	for _, e := range b.Edges {
		m.edges.WithLabelValues(e.Type).Inc()
	}
	for _, p := range b.Outcomes {
		m.hosts.WithLabelValues(p.PageOutcome()).Inc()
	}
}

// Outcomes returns how many hosts this run wrote, by page outcome (the
// spyder_hosts_total series).
func (m *Set) Outcomes() map[string]int64 {
	out := map[string]int64{}
	ch := make(chan prometheus.Metric, 64)
	go func() { m.hosts.Collect(ch); close(ch) }()
	for c := range ch {
		var pb dto.Metric
		if c.Write(&pb) != nil {
			continue
		}
		for _, l := range pb.GetLabel() {
			if l.GetName() == "outcome" {
				out[l.GetValue()] = int64(pb.GetCounter().GetValue())
			}
		}
	}
	return out
}

// Serve serves /metrics and /healthz on addr, and root (when not nil) at
// every other path, until stop is called. /healthz answers 200 while
// health returns nil within two seconds, and 503 with its error otherwise.
// The error is the listener's: the address is taken or malformed.
func (m *Set) Serve(ctx context.Context, addr string, health func(context.Context) error, root http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		hctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := health(hctx); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	if root != nil {
		mux.Handle("/", root)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics_server", "err", err)
		}
	}()
	log.Info("metrics_listening", "addr", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}, nil
}
