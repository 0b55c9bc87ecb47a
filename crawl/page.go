package crawl

import (
	"bufio"
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
	ct := resp.Header.Get("Content-Type")
	if ct != "" && !isHTML(ct) {
		p.set(spyder.StepPage, spyder.StatusNotHTML, ct)
		return
	}
	dec, err := decodeBody(resp)
	if err != nil {
		status, detail := classify(ctx, err, spyder.StatusError)
		p.set(spyder.StepPage, status, "reading page: "+detail)
		return
	}
	br := bufio.NewReaderSize(dec, sniffLen)
	if ct == "" {
		// No Content-Type: sniffed as browsers do (the MIME Sniffing
		// standard, which http.DetectContentType follows).
		head, _ := br.Peek(512)
		if sniffed := http.DetectContentType(head); !isHTML(sniffed) {
			p.set(spyder.StepPage, spyder.StatusNotHTML, "sniffed "+sniffed)
			return
		}
		// The sniffer's charset is its guess; the page's own <meta>
		// declaration, which decodeHTML reads, comes before a guess.
		ct = "text/html"
	}
	body := &capReader{r: decodeHTML(br, ct), n: p.c.cfg.BodyCap}
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

// isHTML reports whether the media type of Content-Type ct is HTML or
// XHTML, in any case and with any parameters.
func isHTML(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "text/html" || mt == "application/xhtml+xml"
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
