package host_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spyder-crawler/spyder/host"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in, want string
		reason         string // substring of the error when want is ""
	}{
		{"plain", "example.com", "example.com", ""},
		{"trim", "  a.com \n", "a.com", ""},
		{"tab and CR", "\ta.com\r", "a.com", ""},
		{"case", "ExAmple.COM", "example.com", ""},
		{"trailing dot", "a.com.", "a.com", ""},
		{"BOM", "\ufeffa.com", "a.com", ""},
		{"IDN", "bücher.de", "xn--bcher-kva.de", ""},
		{"IDN upper case", "BÜCHER.de", "xn--bcher-kva.de", ""},
		{"IDN CJK", "例え.jp", "xn--r8jz45g.jp", ""},
		{"IDN fullwidth dot", "a。com", "a.com", ""},
		{"punycode kept", "xn--bcher-kva.de", "xn--bcher-kva.de", ""},
		{"URL", "https://a.com/path?q=1", "a.com", ""},
		{"URL with userinfo and port", "http://user:pw@A.com:8080/x", "a.com", ""},
		{"scheme-relative URL", "//a.com/x", "a.com", ""},
		{"host:port", "a.com:443", "a.com", ""},
		{"path without scheme", "a.com/x", "a.com", ""},
		{"fragment", "a.com#top", "a.com", ""},
		{"underscore", "_dmarc.a.com", "_dmarc.a.com", ""},
		{"digits in labels", "1.2.3.example", "1.2.3.example", ""},
		{"max length", strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 126) + "a", ""},
		{"max label", strings.Repeat("a", 63) + ".com", strings.Repeat("a", 63) + ".com", ""},

		{"empty", "", "", "empty"},
		{"blank", "   ", "", "empty"},
		{"only a dot", ".", "", "empty"},
		{"URL without host", "http://", "", "empty"},
		{"too long", strings.Repeat("a.", 127) + "com", "", "too long"},
		{"label too long", strings.Repeat("a", 64) + ".com", "", "too long"},
		{"huge input", strings.Repeat("a", 5000), "", "too long"},
		{"space", "a b.com", "", "bad character"},
		{"bang", "a!.com", "", "bad character"},
		{"NUL", "a.com\x00", "", "bad character"},
		{"bad port", "a.com:abc", "", "bad character"},
		{"mailto", "mailto:a@b.com", "", "bad character"},
		{"empty label", "a..com", "", "empty label"},
		{"leading dot", ".a.com", "", "empty label"},
		{"two trailing dots", "a.com..", "", "empty label"},
		{"leading hyphen", "-a.com", "", "hyphen"},
		{"trailing hyphen", "a-.com", "", "hyphen"},
		{"IPv4", "1.2.3.4", "", "IP address"},
		{"IPv4 with port", "1.2.3.4:80", "", "IP address"},
		{"IPv4 in URL", "http://1.2.3.4/", "", "IP address"},
		{"IPv6", "::1", "", "IP address"},
		{"IPv6 bracketed", "[::1]", "", "IP address"},
		{"IPv6 URL", "http://[2001:db8::1]:80/", "", "IP address"},
		{"single label", "localhost", "", "single label"},
		{"numeric TLD", "a.123", "", "numeric"},
		{"bad punycode", "xn--a.com", "", "not valid punycode"},
		{"empty punycode", "xn--.com", "", "hyphen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := host.Parse(tt.in)
			if tt.want != "" {
				if err != nil || got != host.Name(tt.want) {
					t.Errorf("Parse(%q) = %q, %v; want %q, nil", tt.in, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse(%q) = %q, nil; want an error (%s)", tt.in, got, tt.reason)
			}
			if !errors.Is(err, host.ErrInvalid) {
				t.Errorf("Parse(%q) error = %v, want ErrInvalidHost", tt.in, err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("Parse(%q) error = %q, want the reason %q", tt.in, err, tt.reason)
			}
			if len(err.Error()) > 200 {
				t.Errorf("Parse(%q) error is %d bytes long, want the input clipped", tt.in, len(err.Error()))
			}
		})
	}
}

func ExampleParse() {
	for _, in := range []string{"https://Bücher.DE./shop", "a.com:443", "10.0.0.1"} {
		h, err := host.Parse(in)
		fmt.Println(h, err)
	}
	// Output:
	// xn--bcher-kva.de <nil>
	// a.com <nil>
	//  invalid host "10.0.0.1": IP address, not a host name
}

// TestError_ReadWithAs: a caller reads the input and the reason with
// errors.As, whole, however long the input; only the message clips it.
func TestError_ReadWithAs(t *testing.T) {
	in := "a!." + strings.Repeat("a", 100) + ".com"
	_, err := host.Parse(in)
	var he *host.Error
	if !errors.As(err, &he) {
		t.Fatalf("Parse(%q) error %v is not a *host.Error", in, err)
	}
	if he.Input != in || he.Reason != "bad character '!'" {
		t.Errorf("Error = {Input: %q, Reason: %q}; want the whole input and \"bad character '!'\"", he.Input, he.Reason)
	}
	if strings.Contains(err.Error(), in) {
		t.Errorf("message %q quotes all %d bytes of the input; want it clipped", err, len(in))
	}
}

func TestName_Apex(t *testing.T) {
	tests := []struct{ host, want host.Name }{
		{"www.example.com", "example.com"},
		{"example.com", "example.com"},
		{"a.b.example.co.uk", "example.co.uk"},
		{"co.uk", "co.uk"},
		{"foo.unknowntld", "foo.unknowntld"},
		{"x.y.github.io", "y.github.io"},
	}
	for _, tt := range tests {
		if got := tt.host.Apex(); got != tt.want {
			t.Errorf("Name(%q).Apex() = %q, want %q", tt.host, got, tt.want)
		}
	}
}
