package main

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

	"spyder/crawl"
	"spyder/limiter"
	"spyder/queue"
)

// metrics are the Prometheus series a run exports on --metrics-addr. Each
// run has its own registry, so tests can run several in one process.
type metrics struct {
	reg *prometheus.Registry

	hosts       *prometheus.CounterVec // by page outcome
	edges       *prometheus.CounterVec // by type
	queue       *prometheus.GaugeVec   // by state
	leaseAge    prometheus.Gauge
	inflight    prometheus.Gauge
	leased      prometheus.Counter
	acked       prometheus.Counter
	failed      prometheus.Counter
	dead        prometheus.Counter
	reclaimed   prometheus.Counter
	leaseLost   prometheus.Counter
	discovered  prometheus.Counter
	batches     prometheus.Counter
	sinkRetries prometheus.Counter
	spooled     prometheus.Counter
	replayed    prometheus.Counter
	spoolDepth  prometheus.Gauge
}

func newMetrics(lim limiter.Limiter) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
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
	f(m.hosts)
	f(m.edges)
	f(m.queue)
	m.leaseAge = gauge("queue_oldest_lease_age_seconds", "Age of the oldest lease in the queue (any worker).")
	m.inflight = gauge("inflight_hosts", "Hosts this process is probing or writing now.")
	m.leased = counter("leased_total", "Items this process leased.")
	m.acked = counter("acked_total", "Hosts this process finished and acknowledged.")
	m.failed = counter("failed_total", "Hosts handed back through Fail (their output could not be written).")
	m.dead = counter("dead_total", "Items this process sent to dead (attempts exhausted).")
	m.reclaimed = counter("leases_reclaimed_total", "Expired leases this process returned to the queue.")
	m.leaseLost = counter("leases_lost_total", "Acks refused because the lease had expired and was reclaimed.")
	m.discovered = counter("discovered_enqueued_total", "Discovered hosts enqueued (--continuous).")
	m.batches = counter("sink_batches_total", "Output batches made durable by the sink.")
	m.sinkRetries = counter("sink_retries_total", "Ingest POSTs retried after a failure.")
	m.spooled = counter("sink_spooled_total", "Batches spooled in the store because the ingest endpoint failed.")
	m.replayed = counter("sink_replayed_total", "Spooled batches delivered later.")
	m.spoolDepth = gauge("sink_spool_depth", "Batches waiting in the spool.")
	if lim != nil {
		f(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "spyder", Name: "limiter_waits_total",
			Help: "Requests that had to wait for the per-host rate limiter."}, func() float64 { return float64(lim.Stats().Waits) }))
	}
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observeQueue records a queue snapshot.
func (m *metrics) observeQueue(st queue.Stats) {
	m.queue.WithLabelValues("pending").Set(float64(st.Pending))
	m.queue.WithLabelValues("processing").Set(float64(st.Processing))
	m.queue.WithLabelValues("dead").Set(float64(st.Dead))
	m.queue.WithLabelValues("seen").Set(float64(st.Seen))
	m.leaseAge.Set(st.OldestLeaseAge.Seconds())
}

// observeBatch counts what a batch the sink made durable held.
func (m *metrics) observeBatch(b *crawl.Batch) {
	m.batches.Inc()
	for _, e := range b.Edges {
		m.edges.WithLabelValues(e.Type).Inc()
	}
	for _, p := range b.Probes {
		m.hosts.WithLabelValues(pageOutcome(p)).Inc()
	}
}

// pageOutcome is how a probe ended: the status of its last step that ran.
func pageOutcome(p crawl.ProbeOutcome) string {
	for _, s := range p.Steps {
		if s.Step == crawl.StepPage {
			return s.Status
		}
	}
	if n := len(p.Steps); n > 0 {
		return p.Steps[n-1].Status
	}
	return "unknown"
}

// serveMetrics serves /metrics and /healthz on addr until ctx ends.
// /healthz answers 200 while the queue answers within two seconds.
func serveMetrics(ctx context.Context, addr string, m *metrics, q queue.Queue, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usagef("--metrics-addr %s: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		hctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := q.Stats(hctx); err != nil {
			http.Error(w, "queue: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
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
