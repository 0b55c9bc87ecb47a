package resolver

import (
	"github.com/prometheus/client_golang/prometheus"
)

// collector reports each server's counts as they stand when the registry
// is read, so the Client keeps one set of counters and the series never
// disagree with the output's.
type collector struct {
	stats    func() []Stats
	queries  *prometheus.Desc
	up       *prometheus.Desc
	setAside *prometheus.Desc
}

// Collector returns the Prometheus series of r's servers, read from
// [Client.Stats] at each scrape: spyder_dns_queries_total by resolver and
// result, spyder_dns_resolver_up and spyder_dns_resolver_set_aside_total.
// Register it once per registry.
func (r *Client) Collector() prometheus.Collector {
	return &collector{
		stats: r.Stats,
		queries: prometheus.NewDesc("spyder_dns_queries_total",
			"DNS queries by resolver and how they ended: answer, timeout, error, servfail, refused (both asked again of another resolver), truncated (asked again over TCP).",
			[]string{"resolver", "result"}, nil),
		up: prometheus.NewDesc("spyder_dns_resolver_up",
			"1 while the resolver is in rotation, 0 while it is set aside after it stopped answering.",
			[]string{"resolver"}, nil),
		setAside: prometheus.NewDesc("spyder_dns_resolver_set_aside_total",
			"Times the resolver was set aside for not answering.",
			[]string{"resolver"}, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.queries
	ch <- c.up
	ch <- c.setAside
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.stats() {
		for _, r := range []struct {
			result string
			n      uint64
		}{
			{"answer", s.Answers}, {"timeout", s.Timeouts}, {"error", s.Errors},
			{"servfail", s.ServFail}, {"refused", s.Refused}, {"truncated", s.Truncated},
		} {
			ch <- prometheus.MustNewConstMetric(c.queries, prometheus.CounterValue, float64(r.n), s.Server, r.result)
		}
		up := 0.0
		if s.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, s.Server)
		ch <- prometheus.MustNewConstMetric(c.setAside, prometheus.CounterValue, float64(s.SetAside), s.Server)
	}
}
