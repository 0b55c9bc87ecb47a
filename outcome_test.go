package spyder_test

import (
	"slices"
	"testing"

	"github.com/spyder-crawler/spyder"
)

func TestHostOutcome_Summary(t *testing.T) {
	steps := func(dns, tls, robots, page string) spyder.HostOutcome {
		return spyder.HostOutcome{Steps: []spyder.StepOutcome{
			{Step: spyder.StepDNS, Status: dns}, {Step: spyder.StepTLS, Status: tls},
			{Step: spyder.StepRobots, Status: robots}, {Step: spyder.StepPage, Status: page}}}
	}
	for _, c := range []struct {
		o    spyder.HostOutcome
		want string
	}{
		{steps("ok", "unverified", "http_404", "ok"), "ok"},
		{steps("ok", "ok", "ok", "http_503"), "http_503"},
		{steps("timeout", "no_address", "no_address", "no_address"), "timeout"},
		{steps("servfail", "no_address", "no_address", "no_address"), "servfail"},
		{steps("nxdomain", "nxdomain", "nxdomain", "nxdomain"), "nxdomain"},
		{steps("ok", "connect_error", "connect_error", "connect_error"), "connect_error"},
		{steps("ok", "ok", "robots_blocked", "robots_blocked"), "robots_blocked"},
		{spyder.HostOutcome{}, "error"},
	} {
		if got := c.o.Summary(); got != c.want {
			t.Errorf("Summary(%v) = %q, want %q", c.o.Steps, got, c.want)
		}
	}
}

func TestIsStatus(t *testing.T) {
	for _, s := range append(slices.Clone(spyder.Statuses), "http_404", "http_503", "http_100") {
		if !spyder.IsStatus(s) {
			t.Errorf("IsStatus(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"", "timout", "OK", "http_", "http_5xx", "http_50", "http_5030", "http_abc", "http_099", "transient"} {
		if spyder.IsStatus(s) {
			t.Errorf("IsStatus(%q) = true, want false", s)
		}
	}
}
