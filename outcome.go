package spyder

import (
	"slices"
	"strconv"
	"strings"

	"github.com/spyder-crawler/spyder/host"
)

// HostOutcome is how each step of one host's visit ended.
type HostOutcome struct {
	Host  host.Name     `json:"host"`
	Steps []StepOutcome `json:"steps"`
}

// StepOutcome is one step's result within a [HostOutcome]. Status is one
// of [Statuses] or "http_<code>"; Detail carries the error text, if any.
type StepOutcome struct {
	Step   string `json:"step"` // one of the Step constants
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Resolvers, on the dns step only, counts per resolver asked how its
	// queries ended, when a resolver's failure shaped the step: some
	// query timed out, failed, or was answered SERVFAIL, REFUSED or
	// truncated. A lookup answered at once by one resolver leaves it out.
	Resolvers []ResolverCounts `json:"resolvers,omitempty"`
}

// ResolverCounts counts how one resolver's queries ended. Answers are the
// answers used (any rcode but SERVFAIL and REFUSED); Timeouts and Errors are
// queries it left unanswered (no answer in time; a network error such as
// a closed port); ServFail and Refused are answers asked again of another
// resolver when there is one; Truncated are UDP answers with the TC bit,
// asked again over TCP (whose outcome is counted too).
type ResolverCounts struct {
	Server    string `json:"server"`
	Answers   uint64 `json:"answers,omitempty"`
	Timeouts  uint64 `json:"timeouts,omitempty"`
	Errors    uint64 `json:"errors,omitempty"`
	ServFail  uint64 `json:"servfail,omitempty"`
	Refused   uint64 `json:"refused,omitempty"`
	Truncated uint64 `json:"truncated,omitempty"`
}

// Failed reports whether any query ended otherwise than with an answer.
func (c ResolverCounts) Failed() bool {
	return c.Timeouts+c.Errors+c.ServFail+c.Refused+c.Truncated > 0
}

// Steps of a visit, as [StepOutcome.Step] names them, in the order they run
// and are written.
const (
	StepDNS    = "dns"
	StepTLS    = "tls"
	StepRobots = "robots"
	StepPage   = "page"
)

// Step statuses other than "http_<code>".
const (
	StatusOK               = "ok"
	StatusNXDomain         = "nxdomain"
	StatusServFail         = "servfail"
	StatusPartial          = "partial" // the DNS step: some queries failed
	StatusTimeout          = "timeout"
	StatusExcluded         = "excluded"
	StatusPrivateAddress   = "private_address"
	StatusNoAddress        = "no_address"
	StatusConnectError     = "connect_error"
	StatusTLSError         = "tls_error"
	StatusUnverified       = "unverified"
	StatusRobotsBlocked    = "robots_blocked"
	StatusNotHTML          = "not_html"
	StatusTooManyRedirects = "too_many_redirects"
	StatusInvalidHost      = "invalid_host"
	StatusError            = "error"
)

// Statuses are the statuses a step can end with, other than "http_<code>".
var Statuses = []string{
	StatusOK, StatusNXDomain, StatusServFail, StatusPartial, StatusTimeout, StatusExcluded,
	StatusPrivateAddress, StatusNoAddress, StatusConnectError, StatusTLSError,
	StatusUnverified, StatusRobotsBlocked, StatusNotHTML, StatusTooManyRedirects,
	StatusInvalidHost, StatusError,
}

// IsStatus reports whether s is a status a step can end with: one of
// [Statuses] or "http_" and a three-digit code.
func IsStatus(s string) bool {
	if code, ok := strings.CutPrefix(s, "http_"); ok {
		n, err := strconv.Atoi(code)
		return err == nil && len(code) == 3 && n >= 100
	}
	return slices.Contains(Statuses, s)
}

// PageOutcome is how a visit ended, as spyder_hosts_total and `spyder
// graph summary` count it: the page step's status, or the status of the
// last step that ran when there is no page step.
func (o HostOutcome) PageOutcome() string {
	for _, s := range o.Steps {
		if s.Step == StepPage {
			return s.Status
		}
	}
	if n := len(o.Steps); n > 0 {
		return o.Steps[n-1].Status
	}
	return "unknown"
}

// Summary is the visit's outcome in one word, as the queue keeps it for
// the host: "ok" when the page step ended "ok"; else the DNS step's status
// when the lookup failed ("nxdomain", "timeout", "servfail", "error");
// else the page step's, which names why the page was not fetched
// ("http_503", "connect_error", "robots_blocked", "excluded", ...).
func (o HostOutcome) Summary() string {
	var dns, page string
	for _, s := range o.Steps {
		switch s.Step {
		case StepDNS:
			dns = s.Status
		case StepPage:
			page = s.Status
		}
	}
	switch {
	case page == StatusOK:
		return StatusOK
	case dns != "" && dns != StatusOK:
		return dns
	case page != "":
		return page
	}
	return StatusError
}
