package crawl

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestWriteRequest_AsHTTPPackage checks that a request is the bytes
// http.Request.Write sends for the same GET, header for header, for plain
// and awkward user agents and paths.
func TestWriteRequest_AsHTTPPackage(t *testing.T) {
	for _, tc := range []struct{ ua, host, path string }{
		{"spyder/0.1.0 (+https://github.com/spyder-crawler/spyder)", "example.com", "/"},
		{"spyder", "xn--bcher-kva.example", "/robots.txt"},
		{"  two\r\nlines\n ", "example.com", "/a%20b?q=1&r=%C3%A9"},
		{"tab\tinside", "sub.example.org", "/p;x=1/?"},
	} {
		var want bytes.Buffer
		req := &http.Request{
			Method: http.MethodGet, URL: &url.URL{Scheme: "https", Host: tc.host, Opaque: tc.path},
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: tc.host,
			Header: http.Header{
				"User-Agent": {tc.ua},
				"Accept":     {"text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"},
			},
		}
		if err := req.Write(&want); err != nil {
			t.Fatal(err)
		}
		c := &Crawler{reqHeaders: requestHeaders(tc.ua)}
		var got bytes.Buffer
		if err := c.writeRequest(&got, tc.host, tc.path); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("writeRequest(%q, %q, ua %q) =\n%q\nhttp.Request.Write:\n%q", tc.host, tc.path, tc.ua, got.String(), want.String())
		}
	}
}

// TestWriteRequest_RefusesControlCharacters checks that a path with a
// control character is not sent, as http.Request.Write refuses it.
func TestWriteRequest_RefusesControlCharacters(t *testing.T) {
	c := &Crawler{reqHeaders: requestHeaders("spyder")}
	for _, path := range []string{"/a\r\nX-Injected: 1", "/\x00", "/\x7f"} {
		var got bytes.Buffer
		if err := c.writeRequest(&got, "example.com", path); err == nil || got.Len() > 0 {
			t.Errorf("writeRequest(%q) wrote %q, err %v; want an error and nothing written", path, got.String(), err)
		}
	}
}

// TestReader_LongHeaderAndBody checks that a connection's response reader,
// smaller than many header lines and bodies, still reads them whole.
func TestReader_LongHeaderAndBody(t *testing.T) {
	long := strings.Repeat("c", 5*readerSize)
	body := strings.Repeat("<a href=\"https://example.org/\">x</a>", 300)
	resp := "HTTP/1.1 200 OK\r\nSet-Cookie: " + long + "\r\nContent-Type: text/html\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
	br := readers.Get().(*bufio.Reader)
	defer readers.Put(br)
	br.Reset(strings.NewReader(resp))
	r, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get("Set-Cookie"); got != long {
		t.Errorf("Set-Cookie has %d bytes, want %d", len(got), len(long))
	}
	got, err := io.ReadAll(r.Body)
	if err != nil || string(got) != body {
		t.Errorf("body: %d bytes, err %v; want %d bytes", len(got), err, len(body))
	}
}

// TestConn_NoReaderBetweenResponses checks that a kept-alive https
// connection gives its response reader back once a response is done and
// takes one again only when the next response comes, losing none of its
// bytes; and that a reader still holding bytes of the connection (a
// second response sent early) is kept, so they are read in turn.
func TestConn_NoReaderBetweenResponses(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	hc := &httpConn{scheme: "https", host: "example.com", nc: client, raw: client, stop: func() bool { return true }, usable: true}
	respond := func(bodies ...string) {
		var b strings.Builder
		for _, body := range bodies {
			b.WriteString("HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
		}
		go server.Write([]byte(b.String()))
	}
	read := func(want string) {
		t.Helper()
		if err := hc.reader(); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(hc.br, &http.Request{Method: http.MethodGet})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || string(got) != want {
			t.Fatalf("body %q, err %v; want %q", got, err, want)
		}
		hc.done(resp)
		if !hc.usable {
			t.Fatal("connection closed after a whole response")
		}
	}
	respond("first")
	read("first")
	if hc.br != nil {
		t.Fatal("reader held after the response was read whole")
	}
	respond("second", "third") // both in one write: the reader keeps the third
	read("second")
	if hc.br == nil {
		t.Fatal("reader given back while it held the next response")
	}
	read("third")
	if hc.br != nil {
		t.Fatal("reader held after the last response")
	}
}

// TestReadFinal_SkipsInformational: 103 Early Hints and 100 Continue
// before the final response are skipped; 101 is final; more than max1xx
// informational responses are an error.
func TestReadFinal_SkipsInformational(t *testing.T) {
	const final = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	hint := "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
	req := &http.Request{Method: http.MethodGet, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	for _, tt := range []struct {
		name, in string
		want     int
		err      bool
	}{
		{"final only", final, 200, false},
		{"early hints", hint + hint + final, 200, false},
		{"continue", "HTTP/1.1 100 Continue\r\n\r\n" + final, 200, false},
		{"switching protocols", "HTTP/1.1 101 Switching Protocols\r\n\r\n", 101, false},
		{"too many", strings.Repeat(hint, max1xx+1) + final, 0, true},
	} {
		resp, err := readFinal(bufio.NewReader(strings.NewReader(tt.in)), req)
		switch {
		case tt.err && err == nil:
			t.Errorf("%s: readFinal = %d, want an error", tt.name, resp.StatusCode)
		case !tt.err && (err != nil || resp.StatusCode != tt.want):
			t.Errorf("%s: readFinal = %v, %v; want %d", tt.name, resp, err, tt.want)
		}
	}
}
