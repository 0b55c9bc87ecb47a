package crawltest

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"golang.org/x/net/idna"

	"github.com/spyder-crawler/spyder/host"
)

// linkTags are the elements and attributes the contract extracts links from.
var linkTags = []struct{ tag, attr string }{
	{"a", "href"}, {"a", "href"}, {"a", "href"}, {"a", "href"},
	{"link", "href"}, {"script", "src"}, {"img", "src"}, {"iframe", "src"}, {"source", "src"},
}

// links draws the links and decoys of s's page and computes the hosts they
// resolve to by the contract's rules.
func (g *gen) links(s *site) {
	if g.chance(0.08) {
		s.base = fmt.Sprintf("https://assets%d.basehost.net/dir/", g.r.IntN(50))
	}
	n := 3 + g.r.IntN(9)
	for i := 0; i < n; i++ {
		t := linkTags[g.r.IntN(len(linkTags))]
		s.links = append(s.links, link{t.tag, t.attr, g.href(s)})
	}
	for i := g.r.IntN(3); i > 0; i-- {
		s.decoys = append(s.decoys, g.decoy())
	}
	if s.page == pageBig {
		for i := 0; i < 3; i++ {
			s.beyond = append(s.beyond, link{"a", "href", fmt.Sprintf("https://beyond-cap-%s.com/", g.label())})
		}
		s.beyond = append(s.beyond, link{"a", "href", "https://" + g.pick(append([]string{"after-cap.example.com"}, g.p.seeds...)) + "/after-cap"})
	}
	s.linkHosts = linkHosts(s)
}

// href draws one URL as a page would write it.
func (g *gen) href(s *site) string {
	seed := g.pick(g.landing)
	if len(g.p.seeds) > 0 {
		seed = g.pick(g.p.seeds)
	}
	x := g.r.IntN(30)
	switch x {
	case 0, 1, 2, 3:
		if strings.HasPrefix(seed, "xn--") { // as pages write them: in Unicode
			if u, err := idna.Lookup.ToUnicode(seed); err == nil {
				seed = u
			}
		}
		return "https://" + seed + "/" + g.pick([]string{"", "about", "a/b?c=d", "#frag"})
	case 4:
		return "http://" + seed + "/page.html"
	case 5:
		return "//" + seed + "/lib.js"
	case 6:
		return "HTTPS://" + strings.ToUpper(seed) + "/About"
	case 7:
		return "https://" + seed + ":8443/port"
	case 8:
		return "https://user:pw@" + seed + "/login"
	case 9:
		return "https://" + seed + "./trailing-dot"
	case 10, 11:
		return fmt.Sprintf("https://nohost-%s.%s/", g.label(), g.suffix())
	case 12:
		return g.pick([]string{"/about", "contact.html", "?page=2", "#top", "./a/b", "../up"})
	case 13:
		return "https://" + g.pick([]string{"www.", "cdn.", "mail.", ""}) + s.apex + "/same-apex"
	case 14:
		return "//static." + s.apex + "/x.css"
	case 15:
		return g.pick([]string{"mailto:info@" + seed, "javascript:void(0)", "data:text/plain,hello",
			"ftp://ftp." + seed + "/pub/", "tel:+15555550100"})
	case 16:
		return fmt.Sprintf("https://%s%d.%s/", g.pick([]string{"café", "bücher", "naïve", "straße"}), g.r.IntN(1000), g.pick([]string{"com", "co.uk", "org"}))
	case 17:
		return g.pick([]string{"http://192.0.2.10/", "https://[2001:db8::5]/x", "http://198.51.100.7:8080/"})
	case 18:
		return g.pick([]string{"https://-bad-.com/", "http://localhost/", "https://a..b.com/", "http://999/"})
	case 19:
		return fmt.Sprintf("https://user%d.github.io/", g.r.IntN(20))
	case 20:
		return fmt.Sprintf("https://shop%d.co.uk/", g.r.IntN(30))
	case 21:
		return "https://" + g.pick(g.landing) + "/"
	case 22:
		return fmt.Sprintf("https://Under_Score%d.com/", g.r.IntN(10))
	default:
		return "https://" + seed + "/"
	}
}

// decoyForms are the places a decoy URL is put, as the text before and
// after it: a comment, script text, a textarea, a form action, a srcset, a
// data-href, plain text and an anchor's name. None of them is a link.
var decoyForms = [][2]string{
	{"<!-- <a href=\"", "\">old</a> -->"},
	{"<script>var s = '<a href=\"", "\">x</a>';</script>"},
	{"<textarea><a href=\"", "\">x</a></textarea>"},
	{"<form action=\"", "submit\"><input type=\"submit\"></form>"},
	{"<img srcset=\"", "a.png 2x\" alt=\"\">"},
	{"<div data-href=\"", "\">x</div>"},
	{"<p>see ", " for more</p>"},
	{"<a name=\"", "\">anchor</a>"},
}

// decoy returns HTML holding a URL that the contract's rules do not take:
// a fresh host in one of decoyForms.
func (g *gen) decoy() string {
	h := fmt.Sprintf("https://decoy-%s.com/", g.label())
	f := decoyForms[g.r.IntN(len(decoyForms))]
	return f[0] + h + f[1]
}

// linkHosts resolves s's links (before the cap) against the page URL and
// <base>, keeps http(s) ones, normalises their hosts with
// host.Parse and returns the distinct valid ones, sorted.
func linkHosts(s *site) []string {
	base, _ := url.Parse("https://" + s.host + "/")
	if s.base != "" {
		b, err := base.Parse(s.base)
		if err == nil {
			base = b
		}
	}
	set := make(map[string]bool)
	for _, l := range s.links {
		if h, ok := resolveLink(base, l.val); ok {
			set[h] = true
		}
	}
	out := make([]string, 0, len(set))
	for h := range set {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// resolveLink is the contract's link rule for one attribute value.
func resolveLink(base *url.URL, val string) (string, bool) {
	u, err := base.Parse(val)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", false
	}
	h, err := host.Parse(u.Hostname())
	if err != nil {
		return "", false
	}
	return string(h), true
}
