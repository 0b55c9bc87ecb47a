package crawl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spyder-crawler/spyder"
)

// errCrawlDelay reports that the gap a host's Crawl-delay asks for does not
// fit in what is left of the visit.
var errCrawlDelay = errors.New("crawl: crawl-delay exceeds the host deadline")

// do sends GET path on hc, after the host's Crawl-delay and the limiter
// allow it, and reads the response header. The caller must call done.
func (p *visit) do(ctx context.Context, hc *httpConn, path string) (*http.Response, error) {
	if err := p.awaitTurn(ctx, hc); err != nil {
		return nil, err
	}
	now := time.Now()
	p.c.robots.sent(hc.host, now)
	deadline := now.Add(p.c.cfg.RequestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	hc.nc.SetDeadline(deadline) // for the body too, which the caller reads
	if ctx.Err() != nil {
		// Cancelled while the deadline was being moved: keep the
		// cancellation's past deadline.
		hc.nc.SetDeadline(time.Unix(1, 0))
	}
	if err := p.c.writeRequest(hc.nc, hc.host, path); err != nil {
		hc.close()
		return nil, fmt.Errorf("write request: %w", err)
	}
	err := hc.reader()
	var resp *http.Response
	if err == nil {
		// The request is made only now, so that a visit waiting on
		// its server does not keep it.
		req := &http.Request{Method: http.MethodGet, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
		resp, err = readFinal(hc.br, req)
	}
	if err != nil {
		hc.close()
		return nil, fmt.Errorf("read response: %w", err)
	}
	return resp, nil
}

// max1xx bounds the informational responses read before a final one, as
// net/http's Transport bounds them.
const max1xx = 5

// readFinal reads the final response to req from br, skipping the
// informational (1xx) responses a server may send first, such as 103 Early
// Hints: http.ReadResponse returns each as a response of its own. 101 is
// final: it switches protocols, which a GET of ours never asks for.
func readFinal(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for range max1xx + 1 {
		resp, err := http.ReadResponse(br, req)
		if err != nil || resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == 101 {
			return resp, err
		}
	}
	return nil, fmt.Errorf("more than %d informational (1xx) responses", max1xx)
}

// reqBufs holds request buffers between requests: a request is a few
// hundred bytes, written in one write.
var reqBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// writeRequest sends GET path to host in one write, one TLS record, as
// http.Request.Write would send it (the Host header, then User-Agent,
// then Accept), without building the request's header map and URL. host
// is a parsed host name; a path holding a control character is refused,
// as http.Request.Write refuses it.
func (c *Crawler) writeRequest(w io.Writer, host, path string) error {
	if strings.ContainsFunc(path, isCTL) {
		return fmt.Errorf("net/http: can't write control character in Request.URL")
	}
	buf := reqBufs.Get().(*bytes.Buffer)
	defer reqBufs.Put(buf)
	buf.Reset()
	buf.WriteString("GET ")
	buf.WriteString(path)
	buf.WriteString(" HTTP/1.1\r\nHost: ")
	buf.WriteString(host)
	buf.WriteString("\r\n")
	buf.WriteString(c.reqHeaders)
	_, err := w.Write(buf.Bytes())
	return err
}

// isCTL reports whether r is an ASCII control character.
func isCTL(r rune) bool { return r < ' ' || r == 0x7f }

// requestHeaders is the end of every request: the User-Agent (each CR and
// LF made a space and the ends trimmed of ASCII space, as
// http.Request.Write does) and Accept headers, and the blank line.
func requestHeaders(userAgent string) string {
	ua := strings.Trim(strings.NewReplacer("\n", " ", "\r", " ").Replace(userAgent), " \t\r\n")
	return "User-Agent: " + ua + "\r\nAccept: text/html,application/xhtml+xml;q=0.9,*/*;q=0.8\r\n\r\n"
}

// awaitTurn waits until a request to hc's host may go out: first for the
// slot the host's Crawl-delay leaves us (failing at once when that slot is
// past ctx's deadline), then for the limiter. Its errors are timeouts when
// ctx ends or the limiter would outlast ctx's deadline, else plain errors.
func (p *visit) awaitTurn(ctx context.Context, hc *httpConn) error {
	now := time.Now()
	if at := p.c.robots.reserve(hc.host, now); at.After(now) {
		if d, ok := ctx.Deadline(); ok && at.After(d) {
			return &stepError{spyder.StatusTimeout, errCrawlDelay}
		}
		t := time.NewTimer(at.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return &stepError{spyder.StatusTimeout, ctx.Err()}
		case <-t.C:
		}
	}
	if l := p.c.cfg.Limiter; l != nil {
		if err := l.Wait(ctx, p.c.cfg.LimitKey(hc.host, hc.ip)); err != nil {
			// A limiter may give up at once when the wait would outlast
			// ctx's deadline; that is a timeout too.
			if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
				return &stepError{spyder.StatusTimeout, fmt.Errorf("limiter: %w", err)}
			}
			return &stepError{spyder.StatusError, fmt.Errorf("limiter: %w", err)}
		}
	}
	if t := p.c.total; t != nil {
		if err := t.Wait(ctx); err != nil {
			// Its only errors: ctx ended, or would first.
			return &stepError{spyder.StatusTimeout, fmt.Errorf("max rate: %w", err)}
		}
	}
	return nil
}

// httpStatus is the status of a step that ended with an unexpected HTTP
// code: "http_" and the code, such as "http_404".
func httpStatus(code int) string { return "http_" + strconv.Itoa(code) }
