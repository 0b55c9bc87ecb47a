package crawltest

import (
	"testing"
	"time"
)

func TestStartSmoke(t *testing.T) {
	start := time.Now()
	w := Start(t, Options{Hosts: 2000, Seed: 1})
	t.Logf("2000 hosts: started in %v, %d seeds, %d expected edges, %d sites, %d certs", time.Since(start), len(w.Seeds), len(w.Expected), len(w.plan.sites), len(w.plan.certs))
	counts := map[string]int{}
	for _, e := range w.Expected {
		counts[e.Type]++
	}
	t.Logf("%v", counts)
	for _, h := range w.Seeds[:20] {
		t.Logf("%s: %s", h, w.Describe(h))
	}
}
