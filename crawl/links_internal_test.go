package crawl

import (
	"net/url"
	"testing"
)

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
