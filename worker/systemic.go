package worker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
)

// holdLimit is how many failed probes in a row the guard holds back before
// it checks the network, even while other probes are still running.
const holdLimit = 64

// Checker tells whether the network a crawl depends on works: nil when its
// resolver answers a question about known (a host that resolved earlier in
// the run, or "" for none), else why not. The crawler's DNS client's
// Check is the one in use.
type Checker func(ctx context.Context, known host.Name) error

// guard keeps a failure of the crawl's own network (a resolver that does
// not answer, a network that is down) from being written as the result of
// every host. A probe that failed in such a way (see suspect) is held back
// instead of written; the held probes are written as the hosts' results as
// soon as another probe succeeds, or once a check finds the resolver
// answering. The check runs when holdLimit probes are held, or when every
// host in flight is; if it fails, or holdLimit probes in a row all failed
// to connect (the resolver works, the way out does not), the run halts and
// the held hosts go back to the queue untouched, to be probed when the
// network works again.
type guard struct {
	check    Checker
	inflight func() int
	halt     func(error)

	mu       sync.Mutex
	held     int
	signs    map[string]int // how the held probes failed
	round    *round         // the held probes' decision, to come
	checking bool
	halted   bool
	known    host.Name // the last host whose DNS lookup was answered
	sawOK    bool      // a probe succeeded while a check ran
}

// round is the decision on the probes held together: done is closed once
// write is set.
type round struct {
	done  chan struct{}
	write bool
}

func newGuard(check Checker, inflight func() int, halt func(error)) *guard {
	return &guard{check: check, inflight: inflight, halt: halt, signs: map[string]int{}, round: &round{done: make(chan struct{})}}
}

// answered reports whether r's DNS lookup got an answer (records or no
// such name): its host can vouch for the resolver in a check.
func answered(r *spyder.Result) bool {
	for _, s := range r.Outcome.Steps {
		if s.Step == spyder.StepDNS {
			return s.Status == spyder.StatusOK || s.Status == spyder.StatusNXDomain
		}
	}
	return false
}

// suspect returns how r failed when its failure could be the crawl's own
// (its DNS got no answer or only SERVFAIL, or no connection could be made),
// or "" when r shows the network works.
func suspect(r *spyder.Result) string {
	for _, s := range r.Outcome.Steps {
		switch {
		case s.Step == spyder.StepDNS && (s.Status == spyder.StatusTimeout || s.Status == spyder.StatusError || s.Status == "servfail"):
			return "dns " + s.Status
		case s.Status == spyder.StatusConnectError:
			return s.Step + " " + s.Status
		}
	}
	return ""
}

// ok notes a probe that shows the network works: the held probes are
// written.
func (g *guard) ok(h host.Name) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.known = h
	switch {
	case g.held > 0 && !g.checking:
		g.decideLocked(true)
	case g.checking:
		g.sawOK = true // the check under way is answered already
	}
}

// hold holds a probe that failed as sign until it is decided, and reports
// whether to write it (false: the run halts, or ctx ended, and the host
// goes back to the queue). resolved is the probe's host when its DNS
// lookup was answered, else "".
func (g *guard) hold(ctx context.Context, sign string, resolved host.Name) bool {
	g.mu.Lock()
	if g.halted {
		g.mu.Unlock()
		return false
	}
	if resolved != "" {
		g.known = resolved
	}
	g.held++
	g.signs[sign]++
	r := g.round
	if !g.checking && (g.held >= holdLimit || g.held >= g.inflight()) {
		g.checking = true
		go g.runCheck(context.WithoutCancel(ctx), g.known)
	}
	g.mu.Unlock()
	select {
	case <-r.done:
		return r.write
	case <-ctx.Done():
		return false
	}
}

// runCheck checks the network and decides the held probes by it.
func (g *guard) runCheck(ctx context.Context, known host.Name) {
	err := g.check(ctx, known)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.checking = false
	if g.sawOK {
		err = nil
	}
	if err == nil && !g.sawOK && g.held >= holdLimit && g.onlyConnectErrorsLocked() {
		err = errors.New("the resolver answers, but not one connection could be made: outbound connections look blocked")
	}
	if err == nil {
		g.decideLocked(true)
		return
	}
	g.halted = true
	g.halt(fmt.Errorf("every one of the last %d probes failed (%s) and %v: stopped, and handed the hosts back to the queue; "+
		"fix the network or --resolver and run again", g.held, g.signsLocked(), err))
	g.decideLocked(false)
}

// onlyConnectErrorsLocked tells whether every held probe failed to
// connect. holdLimit of them in a row, with not one probe succeeding in
// between, is the network failing the same way for every host, not the
// hosts: on any real list most hosts connect. g.mu is held.
func (g *guard) onlyConnectErrorsLocked() bool {
	for sign := range g.signs {
		if !strings.HasSuffix(sign, " "+spyder.StatusConnectError) {
			return false
		}
	}
	return len(g.signs) > 0
}

// decideLocked closes the round of the held probes with write and starts
// the next; g.mu is held.
func (g *guard) decideLocked(write bool) {
	g.round.write = write
	close(g.round.done)
	g.round = &round{done: make(chan struct{})}
	g.held = 0
	g.sawOK = false
	clear(g.signs)
}

// signsLocked lists how the held probes failed, most common first.
func (g *guard) signsLocked() string {
	type kv struct {
		sign string
		n    int
	}
	var all []kv
	for s, n := range g.signs {
		all = append(all, kv{s, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || (all[i].n == all[j].n && all[i].sign < all[j].sign) })
	parts := make([]string, len(all))
	for i, e := range all {
		parts[i] = fmt.Sprintf("%s: %d", e.sign, e.n)
	}
	return strings.Join(parts, ", ")
}
