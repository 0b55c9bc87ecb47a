package crawl_test

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/spyder-crawler/spyder/crawl"
)

func ExampleExtractLinks() {
	page, _ := url.Parse("https://example.com/blog/")
	doc := `<base href="https://cdn.example.net/">
		<a href="post.html">a relative link, resolved against the base</a>
		<a href="//Other.ORG/x">protocol-relative</a>
		<a href="mailto:me@example.com">skipped</a>
		<img src="https://bücher.de/cover.png">`
	for _, h := range crawl.ExtractLinks(strings.NewReader(doc), page) {
		fmt.Println(h, h.Apex())
	}
	// Output:
	// cdn.example.net example.net
	// other.org other.org
	// xn--bcher-kva.de xn--bcher-kva.de
}
