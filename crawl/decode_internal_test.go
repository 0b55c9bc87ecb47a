package crawl

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/unicode"

	"github.com/spyder-crawler/spyder/host"
)

// compress returns b written through the writer w makes.
func compress(t *testing.T, b []byte, w func(io.Writer) io.WriteCloser) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := w(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecodeBody: every coding a server may send unasked is undone, deflate
// whether zlib-wrapped or raw; an unknown one is an error naming it.
func TestDecodeBody(t *testing.T) {
	const text = "User-agent: *\nDisallow: /\n"
	rawFlate := func(w io.Writer) io.WriteCloser { fw, _ := flate.NewWriter(w, flate.DefaultCompression); return fw }
	for _, tt := range []struct {
		enc  string
		body []byte
	}{
		{"", []byte(text)},
		{"identity", []byte(text)},
		{"gzip", compress(t, []byte(text), func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) })},
		{"X-Gzip", compress(t, []byte(text), func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) })},
		{"deflate", compress(t, []byte(text), func(w io.Writer) io.WriteCloser { return zlib.NewWriter(w) })},
		{"deflate", compress(t, []byte(text), rawFlate)},
		{"br", compress(t, []byte(text), func(w io.Writer) io.WriteCloser { return brotli.NewWriter(w) })},
	} {
		resp := &http.Response{Header: http.Header{"Content-Encoding": {tt.enc}}, Body: io.NopCloser(bytes.NewReader(tt.body))}
		r, err := decodeBody(resp)
		if err != nil {
			t.Errorf("decodeBody(%q): %v", tt.enc, err)
			continue
		}
		if got, err := io.ReadAll(r); err != nil || string(got) != text {
			t.Errorf("decodeBody(%q) read %q, %v; want %q", tt.enc, got, err, text)
		}
	}
	for _, enc := range []string{"gzip", "deflate"} { // an empty body is empty, not an error
		resp := &http.Response{Header: http.Header{"Content-Encoding": {enc}}, Body: io.NopCloser(strings.NewReader(""))}
		r, err := decodeBody(resp)
		if err != nil {
			t.Errorf("decodeBody(empty %s): %v, want an empty body", enc, err)
			continue
		}
		if got, err := io.ReadAll(r); err != nil || len(got) != 0 {
			t.Errorf("decodeBody(empty %s) read %q, %v; want nothing", enc, got, err)
		}
	}
	resp := &http.Response{Header: http.Header{"Content-Encoding": {"zstd"}}, Body: io.NopCloser(strings.NewReader("x"))}
	if _, err := decodeBody(resp); err == nil || !strings.Contains(err.Error(), `"zstd"`) {
		t.Errorf("decodeBody(zstd) error = %v, want one naming zstd", err)
	}
}

// TestDecodeHTML_Charsets: a page's links are read in the charset its
// BOM, Content-Type or <meta> declares, IDN hosts coming out in punycode;
// a page declaring none is read as it is (UTF-8), not guessed.
func TestDecodeHTML_Charsets(t *testing.T) {
	doc := func(meta string) []byte {
		return []byte(`<html><head>` + meta + `</head><body><a href="http://bücher.example/">b</a><a href="https://日本.example/">j</a></body></html>`)
	}
	enc := func(e encoding.Encoding, b []byte) []byte {
		out, err := e.NewEncoder().Bytes(b)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	latin := []byte(`<a href="http://bücher.example/">b</a>`)
	for _, tt := range []struct {
		name, contentType string
		body              []byte
		want              []host.Name
	}{
		{"utf-8 undeclared", "text/html", doc(""), []host.Name{"xn--bcher-kva.example", "xn--wgv71a.example"}},
		{"utf-16 by header", "text/html; charset=utf-16le", enc(unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), doc("")), []host.Name{"xn--bcher-kva.example", "xn--wgv71a.example"}},
		{"utf-16 by BOM", "text/html", enc(unicode.UTF16(unicode.BigEndian, unicode.UseBOM), doc("")), []host.Name{"xn--bcher-kva.example", "xn--wgv71a.example"}},
		{"shift_jis by meta", "text/html", enc(japanese.ShiftJIS, []byte(`<meta charset="Shift_JIS"><a href="https://日本.example/">j</a>`)), []host.Name{"xn--wgv71a.example"}},
		{"windows-1252 by header", "TEXT/HTML; Charset=windows-1252", enc(charmap.Windows1252, latin), []host.Name{"xn--bcher-kva.example"}},
		{"iso-8859-1 by meta", "text/html", enc(charmap.ISO8859_1, append([]byte(`<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">`), latin...)), []host.Name{"xn--bcher-kva.example"}},
	} {
		page, _ := url.Parse("https://page.example/")
		got := ExtractLinks(decodeHTML(bufio.NewReaderSize(bytes.NewReader(tt.body), sniffLen), tt.contentType), page)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: links %v, want %v", tt.name, got, tt.want)
		}
	}
}
