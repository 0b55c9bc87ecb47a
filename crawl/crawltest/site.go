package crawltest

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// robotsVariant is one robots.txt a site may serve, with what it means for
// the user agent token "spyder" (per the contract: 4xx allows all, 5xx
// disallows all, the "spyder" group wins over "*", longest match).
type robotsVariant struct {
	name    string
	status  int
	body    string
	blocked bool          // "/" disallowed for spyder
	delay   time.Duration // Crawl-delay for spyder
}

const (
	robotsAllowAll = iota
	robotsDisallowPrivate
	robotsCRLFAdmin
	robots404
	robots410
	robotsOtherBot
	robotsSpecificAllow
	robotsIndexOnly
	robotsBlockAll
	robotsSpyderBlocked
	robotsSpyderUpper
	robotsMultiAgent
	robots500
	robots503
	robotsDelay
	robotsSpyderDelay
)

var robotsVariants = []robotsVariant{
	robotsAllowAll:        {"allow-all", 200, "User-agent: *\nDisallow:\n", false, 0},
	robotsDisallowPrivate: {"disallow-private", 200, "User-agent: *\nDisallow: /private/\nDisallow: /tmp/\n", false, 0},
	robotsCRLFAdmin:       {"crlf-admin", 200, "# robots.txt\r\nUser-agent: *\r\nAllow: /\r\nDisallow: /admin\r\n", false, 0},
	robots404:             {"404", 404, "not found\n", false, 0},
	robots410:             {"410", 410, "gone\n", false, 0},
	robotsOtherBot:        {"other-bot-blocked", 200, "User-agent: otherbot\nDisallow: /\n", false, 0},
	robotsSpecificAllow:   {"star-blocked-spyder-allowed", 200, "User-agent: *\nDisallow: /\n\nUser-agent: spyder\nAllow: /\n", false, 0},
	robotsIndexOnly:       {"index-html-disallowed", 200, "User-agent: *\nDisallow: /index.html\nDisallow: /a\n", false, 0},
	robotsBlockAll:        {"blocks-everyone", 200, "User-agent: *\nDisallow: /\n", true, 0},
	robotsSpyderBlocked:   {"blocks-spyder", 200, "User-agent: spyder\nDisallow: /\n\nUser-agent: *\nAllow: /\n", true, 0},
	robotsSpyderUpper:     {"blocks-SPYDER", 200, "User-agent: SPYDER\nDisallow: /\n", true, 0},
	robotsMultiAgent:      {"blocks-spyder-in-shared-group", 200, "User-agent: googlebot\nUser-agent: spyder\nDisallow: /\n\nUser-agent: *\nDisallow:\n", true, 0},
	robots500:             {"500", 500, "internal error\n", true, 0},
	robots503:             {"503", 503, "busy\n", true, 0},
	robotsDelay:           {"crawl-delay", 200, "User-agent: *\nCrawl-delay: 1\nDisallow: /private/\n", false, time.Second},
	robotsSpyderDelay:     {"spyder-crawl-delay", 200, "User-agent: spyder\nCrawl-delay: 1\nDisallow: /x\n\nUser-agent: *\nDisallow: /\n", false, time.Second},
}

// pageKind is what a site answers for "/".
type pageKind int

const (
	pageHTML             pageKind = iota
	pageXHTML                     // application/xhtml+xml
	pageMalformed                 // tag soup, still parsed
	pageBig                       // over the 512 KiB cap, links on both sides of it
	pageJSON                      // not HTML (links in the text must not count)
	pagePlain                     // text/plain holding HTML
	pageImage                     // image/png
	page500                       // error pages carry links that must not count
	page503                       //
	page404                       //
	pageRedirect                  // to s.target (another host)
	pageRedirectPath              // "/" → "/home" on the same host
	pageChain                     // 3 hops on the same host, then a page
	pageLongChain                 // 10 hops: too many
	pageLoop                      // "/loop/a" ↔ "/loop/b" forever
	pageRedirectDead              // to a host that does not exist
	pageRedirectBlocked           // to a host whose robots.txt blocks spyder
	pageRedirectHTTP              // to a landing site over plain http
	pageRedirectPingpong          // to a pair of hosts redirecting to each other
	pageKinds                     // count of the kinds a normal world draws from

	// Hostile pages (Options.Hostile).
	pageGigabyte    // 1 GiB streamed, links in the first KiB
	pageManyLinks   // 100,000 links, those before the cap count
	pageRedirect50  // 50 hops on the same host
	pageNeverCloses // no length, never ends
)

var pageNames = [...]string{
	"html", "xhtml", "malformed", "big", "json", "text-plain", "image", "500", "503", "404",
	"redirect-other-host", "redirect-path", "redirect-chain-3", "redirect-chain-10", "redirect-loop",
	"redirect-to-nxdomain", "redirect-to-blocked", "redirect-to-http", "redirect-pingpong", "",
	"gigabyte", "100k-links", "redirect-chain-50", "never-closes",
}

func (k pageKind) String() string { return pageNames[k] }

// site is one virtual host of the HTTPS and HTTP servers.
type site struct {
	host    string
	apex    string
	seed    uint64
	good    bool // a redirect target: kept plain and reachable
	robots  int
	page    pageKind
	target  string // absolute URL for redirects to another host
	cert    certKind
	tlsFail bool // no certificate for its SNI: the handshake fails
	trickle bool // robots.txt trickles one byte at a time, forever
	slow    bool // the page body comes in slow chunks (but completes)
	spec    *certSpec
	sans    int // extra SANs on its own certificate (hostile)

	base      string   // first <base href>, "" if none
	links     []link   // links in the page (before the body cap)
	decoys    []string // HTML that holds URLs which must not count
	beyond    []link   // links past the body cap (pageBig only)
	linkHosts []string // distinct hosts the links resolve to (computed)
}

// link is one URL-bearing attribute in a page.
type link struct {
	tag, attr, val string
}

var redirectCodes = []int{301, 302, 303, 307, 308}

func (s *site) redirectCode() int { return redirectCodes[s.seed%uint64(len(redirectCodes))] }

// route is the answer of a site for a path, shared by the servers and by
// the computation of Expected, so the two cannot disagree.
type route struct {
	status   int
	ctype    string
	location string // absolute or path; "" unless a redirect
	html     bool   // the body is the site's page with its links
}

// pageRoutes are the answers for "/" of the page kinds that answer it
// directly with something other than the plain HTML page: other types,
// other spellings of the HTML type, and error statuses.
var pageRoutes = map[pageKind]route{
	pageXHTML:     {status: 200, ctype: "application/xhtml+xml", html: true},
	pageMalformed: {status: 200, ctype: "text/html;charset=UTF-8", html: true},
	pageBig:       {status: 200, ctype: "text/html", html: true},
	pageJSON:      {status: 200, ctype: "application/json"},
	pagePlain:     {status: 200, ctype: "text/plain; charset=utf-8"},
	pageImage:     {status: 200, ctype: "image/png"},
	page500:       {status: 500, ctype: "text/html; charset=utf-8"},
	page503:       {status: 503, ctype: "text/html; charset=utf-8"},
	page404:       {status: 404, ctype: "text/html; charset=utf-8"},
}

// route answers path for s: the hops of a redirect chain, the two ends of
// a redirect loop, the plain page for any other path but "/", and for "/"
// the answer of s's page kind.
func (s *site) route(path string) route {
	redirect := func(loc string) route {
		return route{status: s.redirectCode(), ctype: "text/html; charset=utf-8", location: loc}
	}
	page := route{status: 200, ctype: "text/html; charset=utf-8", html: true}
	if n, ok := strings.CutPrefix(path, "/hop/"); ok {
		i, _ := strconv.Atoi(n)
		last := 2
		switch s.page {
		case pageLongChain:
			last = 9
		case pageRedirect50:
			last = 49
		}
		if i < last {
			return redirect("/hop/" + strconv.Itoa(i+1))
		}
		return redirect("/home")
	}
	switch path {
	case "/loop/a":
		return redirect("/loop/b")
	case "/loop/b":
		return redirect("/loop/a")
	}
	if path != "/" {
		return page
	}
	if rt, ok := pageRoutes[s.page]; ok {
		return rt
	}
	switch s.page {
	case pageRedirect, pageRedirectDead, pageRedirectBlocked, pageRedirectHTTP, pageRedirectPingpong:
		return redirect(s.target)
	case pageRedirectPath:
		return redirect("/home")
	case pageChain, pageLongChain, pageRedirect50:
		return redirect("/hop/1")
	case pageLoop:
		return redirect("/loop/a")
	}
	return page
}

// site creates the virtual host for host; a good site is a plain reachable
// HTML page, otherwise its robots.txt, page and certificate are drawn.
func (g *gen) site(host string, good bool) *site {
	s := &site{host: host, apex: apexOf(host), seed: g.r.Uint64(), good: good}
	g.p.sites[host] = s
	if good {
		return s
	}
	s.robots = g.robotsRoll()
	s.page = g.pageRoll(s)
	switch s.page {
	case pageChain, pageLongChain, pageLoop:
		// With a Crawl-delay of 1 s these would take longer than a
		// reasonable HostTimeout, making the outcome depend on it.
		if robotsVariants[s.robots].delay > 0 {
			s.page = pageHTML
		}
	}
	x := g.r.Float64()
	switch {
	case x < 0.03:
		s.cert = certExpired
	case x < 0.06:
		s.cert = certSelfSigned
	case x < 0.09:
		s.cert = certWrongName
	case x < 0.105:
		s.tlsFail = true
	}
	return s
}

// weighted is one choice of a weighted draw: v, with probability w.
type weighted[T any] struct {
	v T
	w float64
}

// draw picks one of choices with a single draw of g.r: choice i when the
// draw falls in its share of [0, 1) after the shares of those before it,
// def when it falls past them all. The order of choices is part of the
// world: reordering them changes what every seed draws.
func draw[T any](g *gen, choices []weighted[T], def T) T {
	x := g.r.Float64()
	for _, c := range choices {
		if x < c.w {
			return c.v
		}
		x -= c.w
	}
	return def
}

// robotsWeights are the shares of the robots.txt variants of a drawn site;
// the rest (about half) allow everything.
var robotsWeights = []weighted[int]{
	{robotsDisallowPrivate, .12}, {robotsCRLFAdmin, .05}, {robots404, .12}, {robots410, .02},
	{robotsOtherBot, .04}, {robotsSpecificAllow, .03}, {robotsIndexOnly, .02}, {robotsBlockAll, .05},
	{robotsSpyderBlocked, .04}, {robotsSpyderUpper, .01}, {robotsMultiAgent, .01}, {robots500, .015},
	{robots503, .015}, {robotsDelay, .01}, {robotsSpyderDelay, .005},
}

// robotsRoll draws the robots.txt variant of a site.
func (g *gen) robotsRoll() int {
	return draw(g, robotsWeights, robotsAllowAll)
}

// pageWeights are the shares of the page kinds of a drawn site; the rest
// (about two thirds) are plain HTML.
var pageWeights = []weighted[pageKind]{
	{pageXHTML, .02}, {pageMalformed, .06}, {pageBig, .015}, {pageJSON, .02}, {pagePlain, .015},
	{pageImage, .015}, {page500, .01}, {page503, .015}, {page404, .01}, {pageRedirect, .04},
	{pageRedirectPath, .04}, {pageChain, .015}, {pageLongChain, .01}, {pageLoop, .01},
	{pageRedirectDead, .01}, {pageRedirectBlocked, .01}, {pageRedirectHTTP, .015},
	{pageRedirectPingpong, .005},
}

// pageRoll draws the page kind of s and, for a redirect to another host,
// its target: a landing site, a nonexistent name, a host that blocks
// spyder, or one of a pair redirecting to each other.
func (g *gen) pageRoll(s *site) pageKind {
	k := draw(g, pageWeights, pageHTML)
	switch k {
	case pageRedirect:
		s.target = fmt.Sprintf("https://%s/welcome?from=%s", g.pick(g.landing), s.host)
	case pageRedirectHTTP:
		s.target = fmt.Sprintf("http://%s/", g.pick(g.landing))
	case pageRedirectDead:
		s.target = fmt.Sprintf("https://gone-%s.com/", g.label())
	case pageRedirectBlocked:
		s.target = "https://" + g.pick(g.blocked) + "/"
	case pageRedirectPingpong:
		s.target = "https://" + g.pick(g.loops) + "/"
	}
	return k
}

// describe summarises s's HTTP side for test failure messages.
func (s *site) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "robots=%s page=%s", robotsVariants[s.robots].name, s.page)
	if s.target != "" {
		fmt.Fprintf(&b, " target=%s", s.target)
	}
	if s.tlsFail {
		b.WriteString(" tls=fails")
	} else {
		fmt.Fprintf(&b, " cert=%s", s.cert)
		if s.spec != nil {
			fmt.Fprintf(&b, "(%d names)", len(s.spec.names))
		}
	}
	if s.trickle {
		b.WriteString(" trickle-forever")
	}
	if s.slow {
		b.WriteString(" slow")
	}
	if s.base != "" {
		fmt.Fprintf(&b, " base=%s", s.base)
	}
	fmt.Fprintf(&b, " links=%v", s.linkHosts)
	return b.String()
}
