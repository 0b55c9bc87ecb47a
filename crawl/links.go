package crawl

import (
	"io"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/spyder-crawler/spyder/host"
)

// linkAttr maps the elements links are taken from to the attribute holding
// the URL: href of a and link, src of script, img, iframe and source.
var linkAttr = map[atom.Atom]string{
	atom.A:      "href",
	atom.Link:   "href",
	atom.Script: "src",
	atom.Img:    "src",
	atom.Iframe: "src",
	atom.Source: "src",
}

// maxRawLinks bounds how many link attributes one page contributes, so a
// page made of nothing but links cannot make a visit hold more than a few
// megabytes however large BodyCap is.
const maxRawLinks = 20_000

// ExtractLinks reads an HTML document from r and returns the distinct hosts
// its links point to, in document order: `a` and `link` href, `script`,
// `img`, `iframe` and `source` src, and the URL of a `<meta
// http-equiv="refresh">` (a link the page follows by itself; it is
// recorded as a link, not followed as a redirect is). URLs are resolved against the first
// `<base href>` of the document (wherever it appears, as browsers do), itself
// resolved against page. Only http and https links count; hosts are
// normalised with [host.Parse], and IP literals and invalid names
// are skipped. Malformed HTML is read as browsers would tokenize it.
//
// ExtractLinks reads r to its end or first error; the caller bounds r.
func ExtractLinks(r io.Reader, page *url.URL) []host.Name {
	z := html.NewTokenizer(r)
	var raw []string
	var base string
	haveBase := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		a := tagAtom(z.Raw())
		if a == atom.Meta {
			if u, ok := refreshURL(z); ok && len(raw) < maxRawLinks {
				raw = append(raw, u)
			}
			continue
		}
		want, isLink := linkAttr[a]
		if !isLink && a != atom.Base {
			continue
		}
		// As in browsers, only the first of duplicate attributes counts.
		for hasAttr := true; hasAttr; {
			var k, v []byte
			k, v, hasAttr = z.TagAttr()
			switch {
			case a == atom.Base && string(k) == "href":
				if !haveBase {
					base, haveBase = string(v), true
				}
				hasAttr = false
			case isLink && string(k) == want:
				if len(raw) < maxRawLinks {
					raw = append(raw, string(v))
				}
				hasAttr = false
			}
		}
	}
	ref := page
	if haveBase {
		if b, err := resolve(page, base); err == nil {
			ref = b
		}
	}
	var hosts []host.Name
	seen := make(map[host.Name]bool)
	for _, s := range raw {
		scheme, name, ok := linkHost(ref, s)
		if !ok || (scheme != "http" && scheme != "https") {
			continue
		}
		h, err := host.Parse(name)
		if err != nil || seen[h] {
			continue
		}
		seen[h] = true
		hosts = append(hosts, h)
	}
	return hosts
}

// tagAtom returns the atom of a start tag's name, read from raw, the
// tag's bytes as the document holds them ("<A href=...>"): the name runs
// from after the '<' to the first space, '/' or '>', as the tokenizer
// reads it, and is lowercased in ASCII, as its TagName does. A name longer
// than any element links are taken from is 0. Unlike TagName, it
// allocates nothing; a name holding a NUL, which TagName would give with
// U+FFFD in its place, matches no atom either way.
func tagAtom(raw []byte) atom.Atom {
	var name [8]byte
	n := 0
	for _, c := range raw[1:] {
		switch c {
		case ' ', '\n', '\r', '\t', '\f', '/', '>':
			return atom.Lookup(name[:n])
		}
		if n == len(name) {
			return 0
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		name[n] = c
		n++
	}
	return atom.Lookup(name[:n])
}

// resolve parses s as a URL the way an HTML attribute holds it (surrounding
// whitespace trimmed, tabs and newlines removed) and resolves it against ref.
func resolve(ref *url.URL, s string) (*url.URL, error) {
	u, err := parseRef(s)
	if err != nil {
		return nil, err
	}
	if ref == nil {
		return u, nil
	}
	return ref.ResolveReference(u), nil
}

// parseRef parses s as a URL the way an HTML attribute holds it: surrounding
// whitespace trimmed, tabs and newlines removed.
func parseRef(s string) (*url.URL, error) {
	s = strings.Trim(s, " \t\n\f\r")
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	}
	return url.Parse(s)
}

// linkHost returns the scheme and host name of the URL resolve(ref, s)
// returns, as url.URL.ResolveReference sets them, without building that
// URL: a page's links need only their hosts, and resolving each one's
// path would cost a URL and a path a link. ok is false when s does not
// parse.
func linkHost(ref *url.URL, s string) (scheme, hostname string, ok bool) {
	u, err := parseRef(s)
	if err != nil {
		return "", "", false
	}
	if ref == nil {
		return u.Scheme, u.Hostname(), true
	}
	scheme = u.Scheme
	if scheme == "" {
		scheme = ref.Scheme
	}
	// An absolute URL or "//host/path" keeps its own host; any other
	// takes ref's (a URL with an opaque part has a scheme, and one used as
	// ref has no host).
	if u.Scheme != "" || u.Host != "" || u.User != nil {
		return scheme, u.Hostname(), true
	}
	return scheme, ref.Hostname(), true
}

// refreshURL returns the URL of the meta element z has just read when it
// is a refresh ("5; url=https://example.com/"), parsed as the HTML
// standard's shared declarative refresh steps read its content: a
// delay, a ';' or ',', then the URL, with or without "url=" and quotes.
// ok is false for any other meta element and for a refresh of the page
// itself (no URL).
func refreshURL(z *html.Tokenizer) (u string, ok bool) {
	var refresh bool
	var content string
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		switch string(k) {
		case "http-equiv":
			refresh = strings.EqualFold(strings.TrimSpace(string(v)), "refresh")
		case "content":
			content = string(v)
		}
	}
	if !refresh {
		return "", false
	}
	s := strings.TrimLeft(content, " \t\n\f\r0123456789.")
	s = strings.TrimLeft(s, " \t\n\f\r")
	if s != "" && (s[0] == ';' || s[0] == ',') {
		s = strings.TrimLeft(s[1:], " \t\n\f\r")
	}
	if len(s) >= 3 && strings.EqualFold(s[:3], "url") {
		if rest := strings.TrimLeft(s[3:], " \t\n\f\r"); strings.HasPrefix(rest, "=") {
			s = strings.TrimLeft(rest[1:], " \t\n\f\r")
		}
	}
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		if end := strings.IndexByte(s[1:], s[0]); end >= 0 {
			s = s[1 : end+1]
		} else {
			s = s[1:]
		}
	}
	return s, s != ""
}
