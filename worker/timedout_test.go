package worker

import (
	"testing"

	"github.com/spyder-crawler/spyder"
)

// TestTimedOut: a step that timed out, or whose error says it did, makes a
// visit one the process's load may have caused; a wait the crawler
// refused ahead for the rate limiter or the host's crawl-delay does not.
func TestTimedOut(t *testing.T) {
	step := func(status, detail string) spyder.StepOutcome {
		return spyder.StepOutcome{Step: spyder.StepPage, Status: status, Detail: detail}
	}
	for _, tt := range []struct {
		step spyder.StepOutcome
		want bool
	}{
		{step(spyder.StatusOK, ""), false},
		{step(spyder.StatusTimeout, "reading page: context deadline exceeded"), true},
		{step(spyder.StatusError, "dial tcp 192.0.2.1:443: i/o timeout"), true},
		{step(spyder.StatusTimeout, "limiter: needs 3.2s, beyond the deadline"), false},
		{step(spyder.StatusTimeout, "crawl-delay exceeds the host deadline"), false},
		{step(spyder.StatusTimeout, "max rate: rate: Wait(n=1) would exceed context deadline"), false},
		{step(spyder.StatusTimeout, "dns: query rate: context deadline exceeded: rate: Wait(n=1) would exceed context deadline"), false},
		{step(spyder.StatusError, "connection refused"), false},
	} {
		res := &spyder.Result{Outcome: spyder.HostOutcome{Steps: []spyder.StepOutcome{{Step: spyder.StepDNS, Status: spyder.StatusOK}, tt.step}}}
		if got := timedOut(res); got != tt.want {
			t.Errorf("timedOut(%s %q) = %v, want %v", tt.step.Status, tt.step.Detail, got, tt.want)
		}
	}
}
