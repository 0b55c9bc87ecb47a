package crawl

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/andybalholm/brotli"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/transform"
)

// decodeBody returns a reader of resp's body with its Content-Encoding
// undone: gzip (and x-gzip), deflate (zlib-wrapped, as RFC 9110 defines it,
// or raw, as some servers send it) and br. Requests carry no
// Accept-Encoding, which RFC 9110 reads as "any coding is acceptable", and
// servers of precompressed files send them whatever was asked: a body read
// as it arrived would be a compressed robots.txt read as "no rules". Any
// other coding is an error naming it. The caller bounds what it reads of
// the returned reader, which bounds what a small compressed body can
// expand to. An empty body is empty whatever its coding claims, as net/http
// reads one: an empty robots.txt says "no rules", not "unreadable".
func decodeBody(resp *http.Response) (io.Reader, error) {
	enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity":
		return resp.Body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err == io.EOF {
			return http.NoBody, nil
		}
		return zr, err
	case "deflate":
		return inflate(resp.Body)
	case "br":
		return brotli.NewReader(resp.Body), nil
	}
	return nil, fmt.Errorf("unsupported content-encoding %q", enc)
}

// inflate reads a deflate body: zlib-wrapped when its first two bytes are
// a zlib header (RFC 1950: method 8, header a multiple of 31), else raw.
func inflate(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 512)
	h, err := br.Peek(2)
	if err == io.EOF && len(h) == 0 {
		return http.NoBody, nil
	}
	if err != nil {
		return nil, fmt.Errorf("deflate: %w", err)
	}
	if h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
		return zlib.NewReader(br)
	}
	return flate.NewReader(br), nil
}

// sniffLen is how much of a page decodeHTML reads ahead for a charset
// declaration, as the HTML standard's prescan does.
const sniffLen = 1024

// decodeHTML returns br, an HTML page served with contentType, as UTF-8
// (br's buffer must hold sniffLen bytes): the encoding is the one its byte
// order mark, its Content-Type charset or a <meta> charset in its first
// 1024 bytes declares (x/net/html/charset reads them as the HTML standard
// says). A page declaring none is read
// as it is: guessing windows-1252, as the standard's last resort does,
// would turn a UTF-8 host name further down into another, invented one.
// A UTF-8 page is passed through without a transform.
func decodeHTML(br *bufio.Reader, contentType string) io.Reader {
	preview, _ := br.Peek(sniffLen)
	e, name, certain := charset.DetermineEncoding(preview, contentType)
	if name == "utf-8" || !certain && name == "windows-1252" && !declaresCharset(preview) {
		return br
	}
	return transform.NewReader(br, e.NewDecoder())
}

// declaresCharset reports whether b holds "charset", as any <meta> that
// names an encoding does, in any case.
func declaresCharset(b []byte) bool {
	return bytes.Contains(bytes.ToLower(b), []byte("charset"))
}
