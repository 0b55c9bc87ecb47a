package crawl

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// TestTagAtom_AsTagName checks that tagAtom, reading a start tag's raw
// bytes, names the same link element (or none) as the tokenizer's
// TagName, for names in any case, with attributes or none, self-closing,
// at the end of the input, holding a NUL, and longer than any link element.
func TestTagAtom_AsTagName(t *testing.T) {
	doc := `<A HREF=x><a><Img/><iMg src=y /><SCRIPT src=z></script><link\thref=w>` +
		`<source\nsrc=v><IFRAME\fsrc=u></iframe><base href=/><BaSe><blockquote><sourcex src=t>` +
		`<a\x00 href=s><div><p class=a><br/><scriptx><html><ifram src=r><s` + `cript src=q><a`
	ours := func(a atom.Atom) atom.Atom {
		if _, ok := linkAttr[a]; ok || a == atom.Base {
			return a
		}
		return 0
	}
	z := html.NewTokenizer(strings.NewReader(doc))
	n := 0
	for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		raw := string(z.Raw())
		got := ours(tagAtom(z.Raw()))
		name, _ := z.TagName()
		if want := ours(atom.Lookup(name)); got != want {
			t.Errorf("tagAtom(%q) = %v, want %v (TagName %q)", raw, got, want, name)
		}
		n++
	}
	if n < 20 {
		t.Errorf("read %d start tags, want at least 20", n)
	}
}

// TestLinkHost_AsResolve checks that linkHost gives the scheme and host
// name of the URL resolve builds, for every kind of reference and base.
func TestLinkHost_AsResolve(t *testing.T) {
	bases := []string{"https://a.example/dir/page?q=1#f", "http://user:pw@b.example:8080/", "data:text/html,x",
		"https://[2001:db8::1]:8443/x", "https://c.example"}
	refs := []string{"https://x.example/a", "HTTP://X.Example:81/a", "//y.example/b", "//user@y.example", "//user@",
		"/abs/path", "rel/path", "../up", "?q=2", "#frag", "", "  \t https://z.example/ \n", "mailto:a@b.example",
		"javascript:void(0)", "http://[::1]:80/", "http:opaque", "ht\ntp://w.example/", "http://%zz/", "::bad",
		"https://user@v.example:443", "//[2001:db8::2]/"}
	for _, b := range append(bases, "") {
		var base *url.URL
		if b != "" {
			base = mustParseURL(t, b)
		}
		for _, r := range refs {
			scheme, name, ok := linkHost(base, r)
			u, err := resolve(base, r)
			if ok != (err == nil) {
				t.Errorf("linkHost(%q, %q) ok = %v, resolve error %v", b, r, ok, err)
				continue
			}
			if ok && (scheme != u.Scheme || name != u.Hostname()) {
				t.Errorf("linkHost(%q, %q) = %q, %q, want %q, %q", b, r, scheme, name, u.Scheme, u.Hostname())
			}
		}
	}
}

func mustParseURL(tb testing.TB, s string) *url.URL {
	tb.Helper()
	u, err := url.Parse(s)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}
