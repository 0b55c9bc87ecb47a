package crawl

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/robots"
)

// followPage fetches https://host/ and follows its redirects to the final
// page, recording the page step exactly once. rules is the robots.txt
// policy of the visited host; each hop to another host fetches that host's
// robots.txt before requesting anything of it, and a hop its policy
// disallows ends the chain. Connections are reused from open (by scheme,
// host and port) while the server keeps them open.
func (p *visit) followPage(ctx context.Context, open *conns, addrs []netip.Addr, rules *robots.Rules) {
	u := &url.URL{Scheme: "https", Host: string(p.host), Path: "/"}
	visited := []string{u.String()} // MaxRedirects at most: searched in turn
	for hops := 0; ; hops++ {
		name, err := host.Parse(u.Hostname())
		if err != nil {
			p.set(spyder.StepPage, spyder.StatusError, "redirect to "+err.Error())
			return
		}
		cur := string(name)
		hc, err := p.hopConn(ctx, open, u, cur, addrs)
		if err != nil {
			p.setConnFailed(ctx, err)
			return
		}
		if rules == nil {
			r, status, detail, err := p.robotsFor(ctx, open, hc, addrs)
			if err != nil {
				p.set(spyder.StepPage, status, "robots.txt of "+cur+": "+detail)
				return
			}
			rules = r
			// The server may have closed the connection after
			// robots.txt (or a redirect of it replaced it).
			if hc, err = p.hopConn(ctx, open, u, cur, addrs); err != nil {
				p.setConnFailed(ctx, err)
				return
			}
		}
		path := requestPath(u)
		if !rules.Allowed(path) {
			p.set(spyder.StepPage, spyder.StatusRobotsBlocked, cur+path)
			return
		}
		resp, err := p.do(ctx, hc, path)
		if err != nil {
			status, detail := classify(ctx, err, spyder.StatusError)
			p.set(spyder.StepPage, status, detail)
			return
		}
		loc := redirectTo(resp)
		if loc == "" {
			p.page(ctx, hc, resp, u)
			return
		}
		hc.done(resp)
		next := p.nextHop(u, loc, hops, &visited)
		if next == nil {
			return
		}
		if h, err := host.Parse(next.Hostname()); err == nil {
			p.discover(h)
			if h != name {
				rules = nil
			}
		}
		u = next
	}
}

// setConnFailed records the page step as failed by err, a connection
// that could not be made.
func (p *visit) setConnFailed(ctx context.Context, err error) {
	status, detail := classify(ctx, err, spyder.StatusConnectError)
	p.set(spyder.StepPage, status, detail)
}

// hopConn returns an open connection for u (whose normalised host is
// host): the one open holds for its scheme, host and port if the server has
// kept it open, else a new one, stored in open. The port defaults to 443
// for https and 80 for http.
func (p *visit) hopConn(ctx context.Context, open *conns, u *url.URL, host string, addrs []netip.Addr) (*httpConn, error) {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	key := u.Scheme + "://" + host + ":" + port
	hc := open.get(key)
	if hc == nil || !hc.usable {
		var err error
		hc, err = p.reconnect(ctx, u.Scheme, host, port, addrs)
		if err != nil {
			return nil, err
		}
		open.put(key, hc)
	}
	return hc, nil
}

// requestPath is the request target for u: its escaped path ("/" when
// empty) and query, as robots.txt rules are matched against.
func requestPath(u *url.URL) string {
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return path
}

// redirectTo returns the Location of a 3xx response, or "" when resp is
// not a redirect to follow (another code, or a 3xx without Location).
func redirectTo(resp *http.Response) string {
	code := resp.StatusCode
	if loc := resp.Header.Get("Location"); code >= 300 && code < 400 && loc != "" {
		return loc
	}
	return ""
}

// nextHop resolves the redirect from u to loc, the hops-th followed so
// far, and returns the URL to request next without its fragment. It
// returns nil, with the page step recorded, when loc is not an http(s)
// URL, when following it would exceed MaxRedirects, or when the chain
// comes back to a URL already visited (a loop); visited gains the new URL.
// A redirect within MaxRedirects is an edge (see redirectEdge) even when it
// closes a loop, so the graph shows both directions of a ping-pong.
func (p *visit) nextHop(u *url.URL, loc string, hops int, visited *[]string) *url.URL {
	next, err := resolve(u, loc)
	switch {
	case err != nil || next.Scheme != "http" && next.Scheme != "https":
		p.set(spyder.StepPage, spyder.StatusError, "bad redirect to "+strconv.Quote(loc))
		return nil
	case hops+1 > p.c.cfg.MaxRedirects:
		p.set(spyder.StepPage, spyder.StatusTooManyRedirects, fmt.Sprintf("more than %d", p.c.cfg.MaxRedirects))
		return nil
	}
	next.Fragment, next.RawFragment = "", ""
	p.redirectEdge(u, next)
	if slices.Contains(*visited, next.String()) {
		p.set(spyder.StepPage, spyder.StatusTooManyRedirects, "loop at "+next.String())
		return nil
	}
	*visited = append(*visited, next.String())
	return next
}

// redirectEdge records a REDIRECTS_TO edge from from's host to to's when
// they are host names of different registrable domains. Its source is the
// host of that hop, which is the visited host only on the first hop.
func (p *visit) redirectEdge(from, to *url.URL) {
	src, err1 := host.Parse(from.Hostname())
	dst, err2 := host.Parse(to.Hostname())
	if err1 != nil || err2 != nil || src.Apex() == dst.Apex() {
		return
	}
	p.edges = append(p.edges, spyder.Edge{Type: spyder.RedirectsTo, Source: string(src), Target: string(dst)})
}
