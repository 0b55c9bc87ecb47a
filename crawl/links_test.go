package crawl_test

import (
	"html"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/host"
)

func TestExtractLinks(t *testing.T) {
	tests := []struct {
		name string
		page string // page URL; "" means https://example.com/dir/page.html
		html string
		want []host.Name
	}{
		{"absolute", "", `<a href="https://b.org/x">b</a><a href="http://c.net">c</a>`, []host.Name{"b.org", "c.net"}},
		{"relative stays on page host", "", `<a href="other.html">x</a><a href="/abs">y</a><a href="../up">z</a>`, []host.Name{"example.com"}},
		{"protocol-relative", "http://example.com/", `<a href="//cdn.example.net/lib.js">x</a>`, []host.Name{"cdn.example.net"}},
		{"base applies to later links", "", `<head><base href="https://base.io/sub/"></head><a href="rel">x</a>`, []host.Name{"base.io"}},
		{"base applies to earlier links too", "", `<a href="rel">x</a><base href="//base.io/">`, []host.Name{"base.io"}},
		{"only the first base counts", "", `<base href="https://one.io/"><base href="https://two.io/"><a href="x">x</a>`, []host.Name{"one.io"}},
		{"relative base resolves against page", "https://example.com/a/", `<base href="/b/"><a href="c">x</a>`, []host.Name{"example.com"}},
		{"base without href is ignored", "", `<base target="_blank"><a href="x">x</a>`, []host.Name{"example.com"}},
		{"non-http schemes skipped", "", `<a href="mailto:a@b.org">m</a><a href="javascript:go('https://js.org/')">j</a>
			<a href="data:text/html,hi">d</a><a href="ftp://ftp.org/">f</a><a href="tel:+1">t</a>`, nil},
		{"IDN to punycode", "", `<a href="https://bücher.de/">b</a><a href="https://xn--bcher-kva.de/x">c</a>`, []host.Name{"xn--bcher-kva.de"}},
		{"uppercase host lowercased", "", `<A HREF="HTTPS://WWW.Example.ORG/PATH">x</A>`, []host.Name{"www.example.org"}},
		{"trailing dot and port stripped", "", `<a href="https://shop.example.net.:8443/">x</a>`, []host.Name{"shop.example.net"}},
		{"IP literals skipped", "", `<a href="http://192.0.2.1/">4</a><a href="https://[2001:db8::1]/">6</a>`, nil},
		{"invalid hosts skipped", "", `<a href="https://bad_host!.com/">x</a><a href="https://localhost/">y</a><a href="https:///nohost">z</a>`, nil},
		{"src attributes", "", `<script src="https://s.org/a.js"></script><img src="//i.org/p.png"><iframe src="https://f.org/"></iframe>
			<video><source src="https://v.org/m.mp4"></video>`, []host.Name{"s.org", "i.org", "f.org", "v.org"}},
		{"link href", "", `<link rel="stylesheet" href="https://css.org/s.css">`, []host.Name{"css.org"}},
		{"other attributes and elements ignored", "", `<a src="https://wrong.org/">x</a><img href="https://wrong2.org/">
			<form action="https://form.org/"></form><div data-href="https://d.org/"></div><area href="https://area.org/">`, nil},
		{"text and comments ignored", "", `<p>https://text.org/</p><!-- <a href="https://comment.org/"> -->
			<script>document.write('<a href="https://script.org/">')</script>`, nil},
		{"entities decoded", "", `<a href="https://amp.org/?a=1&amp;b=2">x</a><a href="https&#58;//ent.org/">y</a>`, []host.Name{"amp.org", "ent.org"}},
		{"whitespace trimmed", "", "<a href=\"  https://ws.org/ \n\">x</a><a href=\"ht\ntps://nl.org/\">y</a>", []host.Name{"ws.org", "nl.org"}},
		{"duplicates once in order", "", `<a href="https://b.org/">1</a><a href="https://a.org/">2</a><a href="https://B.org/x">3</a>`, []host.Name{"b.org", "a.org"}},
		{"self-closing and unquoted", "", `<img src=https://u.org/x.png /><a href=//q.org>x</a>`, []host.Name{"u.org", "q.org"}},
		{"malformed markup", "", `<a href="https://m1.org/"<a href='https://m2.org/'>x</b></a><img src="https://m3.org/`, []host.Name{"m1.org"}},
		{"first of duplicate attributes", "", `<a href="https://first.org/" href="https://second.org/">x</a>`, []host.Name{"first.org"}},
		{"meta refresh is a link", "", `<meta http-equiv="Refresh" content="0; URL='https://moved.org/new'">
			<meta http-equiv="refresh" content="5,https://comma.org/"><meta http-equiv="refresh" content="3;url= /same">
			<meta http-equiv="refresh" content="10"><meta name="refresh" content="0; url=https://notrefresh.org/">`,
			[]host.Name{"moved.org", "comma.org", "example.com"}},
		{"unparseable URLs skipped", "", `<a href="https://%zz.org/">x</a><a href="http://a b.org/">y</a><a href="https://ok.org/">z</a>`, []host.Name{"ok.org"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := tt.page
			if page == "" {
				page = "https://example.com/dir/page.html"
			}
			u, err := url.Parse(page)
			if err != nil {
				t.Fatal(err)
			}
			got := crawl.ExtractLinks(strings.NewReader(tt.html), u)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ExtractLinks(%q) (-want +got):\n%s", tt.html, diff)
			}
		})
	}
}

// maxPageLinks is crawl's cap on the link attributes taken from one page.
const maxPageLinks = 20_000

// FuzzExtractLinks checks that any input yields only normalised, distinct
// host names, no more of them than the document has tags (each comes from
// one link attribute) and never more than the per-page cap, the same
// however the reader splits the document, and never panics.
func FuzzExtractLinks(f *testing.F) {
	f.Add(`<a href="https://b.org/x">b</a><base href="//c.net/"><img src="rel">`, "https://example.com/")
	f.Add(`<a href="mailto:x@y.z">`, "http://a.io/p")
	f.Add("<a href=\"https://bücher.de\x00/\">", "https://example.com/")
	f.Fuzz(func(t *testing.T, doc, page string) {
		u, err := url.Parse(page)
		if err != nil {
			return
		}
		checkLinks(t, doc, u)
		// Random markup seldom holds a link, so the fuzzed text is also
		// tried as a link and as a base URL.
		attr := html.EscapeString(doc)
		checkLinks(t, `<a href="`+attr+`">`, u)
		checkLinks(t, `<base href="`+attr+`"><img src="x/y"><a href="//b.org/">`, u)
	})
}

// checkLinks runs ExtractLinks on doc and checks the properties
// FuzzExtractLinks names.
func checkLinks(t *testing.T, doc string, u *url.URL) {
	t.Helper()
	seen := make(map[string]bool)
	hosts := crawl.ExtractLinks(strings.NewReader(doc), u)
	if tags := strings.Count(doc, "<"); len(hosts) > tags || len(hosts) > maxPageLinks {
		t.Fatalf("ExtractLinks returned %d hosts from a document with %d tags (cap %d)", len(hosts), tags, maxPageLinks)
	}
	// The tokenizer's buffering must not matter: a reader that hands over
	// one byte at a time gives the same hosts.
	if slow := crawl.ExtractLinks(iotest.OneByteReader(strings.NewReader(doc)), u); !slices.Equal(slow, hosts) {
		t.Fatalf("ExtractLinks(%q) read a byte at a time = %q, read at once = %q", doc, slow, hosts)
	}
	for _, h := range hosts {
		if seen[string(h)] {
			t.Fatalf("ExtractLinks(%q): host %q returned twice", doc, h)
		}
		seen[string(h)] = true
		n, err := host.Parse(string(h))
		if err != nil || n != h {
			t.Fatalf("ExtractLinks(%q): host %q is not normalised: host.Parse = %q, %v", doc, h, n, err)
		}
	}
}
