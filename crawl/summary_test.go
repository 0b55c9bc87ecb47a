package crawl_test

import (
	"slices"
	"testing"

	"github.com/spyder-crawler/spyder/crawl"
)

func TestProbeOutcome_Summary(t *testing.T) {
	steps := func(dns, tls, robots, page string) crawl.ProbeOutcome {
		return crawl.ProbeOutcome{Steps: []crawl.StepOutcome{
			{Step: crawl.StepDNS, Status: dns}, {Step: crawl.StepTLS, Status: tls},
			{Step: crawl.StepRobots, Status: robots}, {Step: crawl.StepPage, Status: page}}}
	}
	for _, c := range []struct {
		o    crawl.ProbeOutcome
		want string
	}{
		{steps("ok", "unverified", "http_404", "ok"), "ok"},
		{steps("ok", "ok", "ok", "http_503"), "http_503"},
		{steps("timeout", "no_address", "no_address", "no_address"), "timeout"},
		{steps("servfail", "no_address", "no_address", "no_address"), "servfail"},
		{steps("nxdomain", "nxdomain", "nxdomain", "nxdomain"), "nxdomain"},
		{steps("ok", "connect_error", "connect_error", "connect_error"), "connect_error"},
		{steps("ok", "ok", "robots_blocked", "robots_blocked"), "robots_blocked"},
		{crawl.ProbeOutcome{}, "error"},
	} {
		if got := c.o.Summary(); got != c.want {
			t.Errorf("Summary(%v) = %q, want %q", c.o.Steps, got, c.want)
		}
	}
}

func TestIsStatus(t *testing.T) {
	for _, s := range append(slices.Clone(crawl.Statuses), "http_404", "http_503", "http_100") {
		if !crawl.IsStatus(s) {
			t.Errorf("IsStatus(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"", "timout", "OK", "http_", "http_5xx", "http_50", "http_5030", "http_abc", "http_099", "transient"} {
		if crawl.IsStatus(s) {
			t.Errorf("IsStatus(%q) = true, want false", s)
		}
	}
}
