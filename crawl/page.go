package crawl

import (
	"context"
	"io"
	"mime"
	"net/http"
	"net/url"

	"github.com/spyder-crawler/spyder"
)

// page reads the final response of the page fetch and records its links
// as the visited host's LINKS_TO edges, wherever redirects led: the edge
// says "fetching this host's front page led to a page linking there", and
// the REDIRECTS_TO chain says which host served that page.
func (p *visit) page(ctx context.Context, hc *httpConn, resp *http.Response, u *url.URL) {
	defer hc.done(resp)
	code := resp.StatusCode
	if code < 200 || code > 299 {
		p.set(spyder.StepPage, httpStatus(code), "")
		return
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/html" && mt != "application/xhtml+xml" {
		p.set(spyder.StepPage, spyder.StatusNotHTML, resp.Header.Get("Content-Type"))
		return
	}
	dec, err := decodeBody(resp)
	if err != nil {
		status, detail := classify(ctx, err, spyder.StatusError)
		p.set(spyder.StepPage, status, "reading page: "+detail)
		return
	}
	body := &capReader{r: decodeHTML(dec, resp.Header.Get("Content-Type")), n: p.c.cfg.BodyCap}
	links := ExtractLinks(body, u)
	if body.err != nil {
		status, detail := classify(ctx, body.err, spyder.StatusError)
		p.set(spyder.StepPage, status, "reading page: "+detail)
		return
	}
	apex := p.host.Apex()
	for _, h := range links {
		p.discover(h)
		if h.Apex() != apex {
			p.edge(spyder.LinksTo, string(h))
		}
	}
	detail := ""
	if body.truncated {
		detail = "truncated"
		hc.close()
	}
	p.set(spyder.StepPage, spyder.StatusOK, detail)
}

// capReader reads at most n bytes of r, noting whether r had more and the
// first error other than io.EOF.
type capReader struct {
	r         io.Reader
	n         int64
	truncated bool
	err       error
}

func (c *capReader) Read(b []byte) (int, error) {
	if c.n <= 0 {
		if !c.truncated {
			var one [1]byte
			if k, _ := io.ReadFull(c.r, one[:]); k > 0 {
				c.truncated = true
			}
		}
		return 0, io.EOF
	}
	if int64(len(b)) > c.n {
		b = b[:c.n]
	}
	k, err := c.r.Read(b)
	c.n -= int64(k)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return k, err
}
