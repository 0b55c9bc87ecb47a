package crawl

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/robots"
)

// robotsToken is the product token robots.txt groups are matched against.
const robotsToken = "spyder"

// maxRobotsRedirects is how many redirects a robots.txt fetch follows
// (RFC 9309 §2.3.1.2 asks for at least five); past them the file counts as
// unavailable.
const maxRobotsRedirects = 5

// robotsFor returns the robots.txt policy of hc's host, from the cache or
// fetched (see fetchRobots). A policy is cached unless the fetch timed out.
func (p *visit) robotsFor(ctx context.Context, open *conns, hc *httpConn, addrs []netip.Addr) (*robots.Rules, string, string, error) {
	if r := p.c.robots.get(hc.host, time.Now()); r != nil {
		return r, spyder.StatusOK, "cached", nil
	}
	r, status, detail, err := p.fetchRobots(ctx, open, hc, addrs)
	if err != nil {
		return nil, status, detail, err
	}
	p.c.robots.put(hc.host, r, time.Now())
	return r, status, detail, nil
}

// fetchRobots requests /robots.txt over hc and follows up to
// maxRobotsRedirects redirects, to other hosts too (over connections kept
// in open, dialled as a page redirect's are). As RFC 9309 §2.3.1 says: a
// 2xx is parsed; a 4xx, too many redirects or a redirect to something that
// is not http(s) mean no robots.txt (allow all); a 5xx or a network error
// mean unreachable (disallow all). It returns an error only for a timeout,
// which decides nothing.
func (p *visit) fetchRobots(ctx context.Context, open *conns, hc *httpConn, addrs []netip.Addr) (*robots.Rules, string, string, error) {
	u := &url.URL{Scheme: hc.scheme, Host: hc.host, Path: "/robots.txt"}
	for hops := 0; ; hops++ {
		resp, err := p.do(ctx, hc, requestPath(u))
		if err != nil {
			return robotsUnreachable(ctx, err)
		}
		loc := redirectTo(resp)
		if loc == "" {
			return p.readRobots(ctx, hc, resp)
		}
		hc.done(resp)
		next, err := resolve(u, loc)
		switch {
		case hops == maxRobotsRedirects:
			return robots.Fixed(true, "robots.txt: too many redirects"), spyder.StatusTooManyRedirects, "robots.txt", nil
		case err != nil || next.Scheme != "http" && next.Scheme != "https":
			return robots.Fixed(true, "robots.txt: bad redirect"), spyder.StatusError, "bad redirect to " + loc, nil
		}
		name, err := host.Parse(next.Hostname())
		if err != nil {
			return robots.Fixed(true, "robots.txt: bad redirect"), spyder.StatusError, "redirect to " + err.Error(), nil
		}
		if hc, err = p.hopConn(ctx, open, next, string(name), addrs); err != nil {
			return robotsUnreachable(ctx, err)
		}
		u = next
	}
}

// robotsUnreachable is the policy after err: none for a timeout (the error
// is returned), else disallow all (RFC 9309 §2.3.1.4).
func robotsUnreachable(ctx context.Context, err error) (*robots.Rules, string, string, error) {
	status, detail := classify(ctx, err, spyder.StatusError)
	if status == spyder.StatusTimeout {
		return nil, status, detail, err
	}
	return robots.Fixed(false, "robots.txt unreachable: "+detail), status, detail, nil
}

// readRobots turns the final response of a robots.txt fetch into a policy.
func (p *visit) readRobots(ctx context.Context, hc *httpConn, resp *http.Response) (*robots.Rules, string, string, error) {
	defer hc.done(resp)
	switch c := resp.StatusCode; {
	case c >= 500:
		return robots.Fixed(false, "robots.txt answered "+resp.Status), httpStatus(c), "", nil
	case c < 200 || c > 299:
		return robots.Fixed(true, "robots.txt answered "+resp.Status), httpStatus(c), "", nil
	}
	var data []byte
	dec, err := decodeBody(resp)
	if err == nil {
		body := &capReader{r: dec, n: robots.MaxSize}
		data, _ = io.ReadAll(body)
		err = body.err
	}
	if err != nil {
		// Unreadable, or in a coding we cannot undo: its rules are
		// unknown, which is not "no rules".
		status, detail := classify(ctx, err, spyder.StatusError)
		if status == spyder.StatusTimeout {
			return nil, status, "reading robots.txt: " + detail, err
		}
		return robots.Fixed(false, "robots.txt unreadable: "+detail), spyder.StatusError, detail, nil
	}
	if ctx.Err() != nil {
		return nil, spyder.StatusTimeout, "reading robots.txt", ctx.Err()
	}
	return robots.Parse(data, robotsToken), spyder.StatusOK, "", nil
}
