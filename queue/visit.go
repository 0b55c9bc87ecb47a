package queue

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spyder-crawler/spyder/host"
)

// Visit is a host's last visit as the queue keeps it once the host is done:
// when it was acknowledged and how it ended. Outcome is one short word
// ("ok", "timeout", "servfail", "connect_error", "http_503", ...).
type Visit struct {
	Host    host.Name
	At      int64 // Unix seconds
	Outcome string
}

// Encode returns the record's stored form, "<unix seconds> <outcome>":
// a few bytes a host, the same in every backend.
func (p Visit) Encode() string {
	return strconv.FormatInt(p.At, 10) + " " + p.Outcome
}

// ParseVisit reads what [Visit.Encode] wrote for h.
func ParseVisit(h host.Name, v string) (Visit, error) {
	at, outcome, ok := strings.Cut(v, " ")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || outcome == "" {
		return Visit{}, fmt.Errorf("probe record of %s is %q, want \"<unix seconds> <outcome>\"", h, v)
	}
	return Visit{Host: h, At: n, Outcome: outcome}, nil
}

// CheckVisits reports the first visit in ps whose outcome [CheckOutcome]
// refuses, naming its host; AckAll applies nothing then.
func CheckVisits(ps []Visit) error {
	for _, p := range ps {
		if err := CheckOutcome(p.Outcome); err != nil {
			return fmt.Errorf("probed %s: %w", p.Host, err)
		}
	}
	return nil
}

// CheckOutcome reports what is wrong with an outcome word: it must be
// non-empty, at most 64 bytes, and hold no space or control character.
func CheckOutcome(o string) error {
	if o == "" || len(o) > 64 || strings.IndexFunc(o, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return fmt.Errorf("outcome %q: want one word, like timeout or http_503", o)
	}
	return nil
}

// Selector picks done hosts by their last visit, for [Admin.Requeue].
// A zero Selector picks every done host.
type Selector struct {
	// Before picks visits older than this; zero: any age.
	Before time.Time
	// Outcomes picks visits whose outcome matches one of these (see
	// [MatchOutcome]); empty: any outcome.
	Outcomes []string
}

// Match reports whether p is picked by s.
func (s Selector) Match(p Visit) bool {
	if !s.Before.IsZero() && p.At >= s.Before.Unix() {
		return false
	}
	if len(s.Outcomes) == 0 {
		return true
	}
	for _, pat := range s.Outcomes {
		if MatchOutcome(pat, p.Outcome) {
			return true
		}
	}
	return false
}

// MatchOutcome reports whether outcome matches pattern: equal, or, for a
// pattern ending in "xx" such as "http_5xx", equal up to those two
// characters and as long ("http_503").
func MatchOutcome(pattern, outcome string) bool {
	if p, ok := strings.CutSuffix(pattern, "xx"); ok && len(outcome) == len(pattern) {
		return strings.HasPrefix(outcome, p)
	}
	return pattern == outcome
}

// QueuedHosts returns the hosts of recs that an item pending or in flight
// names: the hosts an import holds queued. A seen record without a visit
// whose host is not among them is not queued: it went to dead, or an older
// spyder visited it before it kept visits.
func QueuedHosts(recs []Record) map[host.Name]bool {
	out := map[host.Name]bool{}
	for _, r := range recs {
		if (r.Kind == KindPending || r.Kind == KindProcessing) && r.Item != nil {
			out[r.Item.Host] = true
		}
	}
	return out
}
