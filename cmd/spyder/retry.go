package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spyder-crawler/spyder"

	"github.com/urfave/cli/v2"

	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

// transientOutcomes are the probe outcomes that may pass on their own: a
// resolver or a server that did not answer, or answered that it could not.
// `--outcome transient` stands for them.
var transientOutcomes = []string{"timeout", "servfail", "error", "connect_error", "http_5xx"}

// retryCommand is `spyder queue retry`: queue done hosts again by how or
// when their last probe ended, and dead items with --dead.
func retryCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:  "retry",
		Usage: "queue done hosts again by their last probe's outcome or age (and dead items with --dead)",
		Description: "--outcome takes a comma-separated list of outcomes as the output's probe steps name them\n" +
			"(timeout, servfail, connect_error, http_503, ...; http_5xx for any 5xx; transient for\n" +
			strings.Join(transientOutcomes, ",") + "). --older-than picks hosts last probed longer ago than D\n" +
			"(7d, 36h). Given both, a host must match both. The hosts go back to pending with attempt 0.",
		Flags: append(backendFlags(),
			&cli.StringFlag{Name: "outcome", Usage: "retry done hosts whose last probe ended so (`LIST`)"},
			&cli.StringFlag{Name: "older-than", Usage: "retry done hosts last probed longer ago than `D` (e.g. 7d)"},
			&cli.BoolFlag{Name: "dead", Usage: "also move every dead item back to pending (as `queue dead retry`)"}),
		Action: queueRetry,
	})
}

func queueRetry(c *cli.Context) error {
	sel, any, err := retrySelector(c)
	if err != nil {
		return err
	}
	if !any && !c.Bool("dead") {
		return usagef("queue retry: say what to retry with --outcome, --older-than or --dead")
	}
	return withBackend(true, func(c *cli.Context, b store.Backend) error {
		if any {
			n, err := b.Requeue(c.Context, sel)
			if err != nil {
				return fmt.Errorf("%s: %w", b.Name(), err)
			}
			fmt.Fprintf(c.App.Writer, "moved %d done hosts back to pending\n", n)
		}
		if c.Bool("dead") {
			return queueDeadRetry(c, b)
		}
		return nil
	})(c)
}

// retrySelector reads --outcome and --older-than; any reports whether
// either was given.
func retrySelector(c *cli.Context) (sel queue.Selector, any bool, err error) {
	if c.IsSet("outcome") {
		for _, o := range splitList(c.String("outcome")) {
			if o == "transient" {
				sel.Outcomes = append(sel.Outcomes, transientOutcomes...)
				continue
			}
			if err := queue.CheckOutcome(o); err != nil {
				return sel, false, usagef("--outcome: %v", err)
			}
			if !knownOutcome(o) {
				fmt.Fprintf(c.App.ErrWriter, "spyder: warning: --outcome %q is no outcome spyder's probes end with%s\n",
					o, suggestKey(o, append(slices.Clone(spyder.Statuses), "transient", "http_4xx", "http_5xx")))
			}
			sel.Outcomes = append(sel.Outcomes, o)
		}
		if len(sel.Outcomes) == 0 {
			return sel, false, usagef("--outcome %q: name at least one outcome, like timeout", c.String("outcome"))
		}
		any = true
	}
	if c.IsSet("older-than") {
		d, err := parseAge(c.String("older-than"))
		if err != nil {
			return sel, false, usagef("--older-than: %v", err)
		}
		sel.Before, any = time.Now().Add(-d), true
	}
	return sel, any, nil
}

// knownOutcome reports whether o is an outcome a probe of this spyder
// ends with, or a pattern such as http_5xx that matches some. The words
// stay open (an import may hold others), so an unknown one is a warning:
// most likely a typo that would otherwise move nothing without a word.
func knownOutcome(o string) bool {
	if p, ok := strings.CutSuffix(o, "xx"); ok {
		return spyder.IsStatus(p + "00")
	}
	return spyder.IsStatus(o)
}

// parseAge reads an age such as "7d", "1d12h" or "90m": a Go duration,
// optionally led by a whole number of days. It must be positive.
func parseAge(s string) (time.Duration, error) {
	var d time.Duration
	rest := s
	if i := strings.IndexByte(s, 'd'); i > 0 {
		days, err := strconv.Atoi(s[:i])
		if err != nil || days < 0 || days > 100_000 {
			return 0, fmt.Errorf("%q: want an age like 7d, 36h or 1d12h", s)
		}
		d, rest = time.Duration(days)*24*time.Hour, s[i+1:]
	}
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("%q: want an age like 7d, 36h or 1d12h", s)
		}
		d += r
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: want an age above zero, like 7d", s)
	}
	return d, nil
}
