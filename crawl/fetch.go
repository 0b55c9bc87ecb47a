package crawl

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"

	"github.com/spyder-crawler/spyder"
)

// stepError is a failed network step and the status it is recorded with.
type stepError struct {
	status string
	err    error
}

func (e *stepError) Error() string { return e.status + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// classify turns an error of a network step into a status and a detail.
func classify(ctx context.Context, err error, fallback string) (string, string) {
	var se *stepError
	if errors.As(err, &se) {
		return se.status, se.err.Error()
	}
	if ctx.Err() != nil || isTimeout(err) {
		return spyder.StatusTimeout, err.Error()
	}
	return fallback, err.Error()
}

// isTimeout reports whether err is a deadline that passed: ctx's, or a
// connection's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout()
}

// fetch runs the HTTPS steps: the certificate of the first connection,
// robots.txt, then the page and its redirects. Each step is recorded once;
// a failure records the steps it prevents with its own reason. Every
// connection the visit opened is closed when fetch returns.
func (p *visit) fetch(ctx context.Context, addrs []netip.Addr) {
	var open conns
	defer func() { open.closeAll() }()

	hc, err := p.connect(ctx, "https", string(p.host), "443", addrs, p.recordCert)
	if err != nil {
		status, detail := classify(ctx, err, spyder.StatusConnectError)
		p.setRest(status, detail)
		return
	}
	open.put("https://"+string(p.host)+":443", hc)

	rules, status, detail, err := p.robotsFor(ctx, &open, hc, addrs)
	p.set(spyder.StepRobots, status, detail)
	if err != nil {
		p.setRest(spyder.StatusTimeout, "")
		return
	}
	p.followPage(ctx, &open, addrs, rules)
}
