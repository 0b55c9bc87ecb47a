package resolver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/resolver"
)

// TestClient_Collector looks up one host through two resolvers of a
// simulated internet, the first answering SERVFAIL, and reads the series
// back from a registry.
func TestClient_Collector(t *testing.T) {
	w := crawltest.Start(t, crawltest.Options{Hosts: 20, Seed: 3})
	second := w.StartResolver(t, "127.0.0.1")
	w.DNS.SetMode(crawltest.DNSServFail)
	r, err := resolver.New(resolver.Config{Servers: w.Resolver + "," + second.Addr, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(r.Collector())
	r.LookupAll(t.Context(), host.Name(w.Seeds[0])) // the first lookup starts at the first resolver

	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "spyder_dns_") {
			continue
		}
		for _, mt := range f.GetMetric() {
			key := f.GetName()
			for _, l := range mt.GetLabel() {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			got[key] = mt.GetCounter().GetValue() + mt.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"spyder_dns_queries_total resolver=" + w.Resolver + " result=servfail":  5,
		"spyder_dns_queries_total resolver=" + w.Resolver + " result=answer":    0,
		"spyder_dns_queries_total resolver=" + second.Addr + " result=servfail": 0,
		"spyder_dns_resolver_up resolver=" + w.Resolver:                         1,
		"spyder_dns_resolver_set_aside_total resolver=" + second.Addr:           0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	// The second resolver answered the five questions.
	if g := got["spyder_dns_queries_total resolver="+second.Addr+" result=answer"]; g < 5 {
		t.Errorf("answers of the second resolver = %v, want at least 5", g)
	}
}
