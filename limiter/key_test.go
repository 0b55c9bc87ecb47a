package limiter_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/spyder-crawler/spyder/limiter"
)

func TestKeyFuncs(t *testing.T) {
	ip4 := netip.MustParseAddr("192.0.2.7")
	ip6 := netip.MustParseAddr("2001:db8::1")
	mapped := netip.MustParseAddr("::ffff:192.0.2.7")
	tests := []struct {
		name string
		fn   limiter.KeyFunc
		host string
		ip   netip.Addr
		want string
	}{
		{"host", limiter.KeyHost, "a.b.example.co.uk", ip4, "a.b.example.co.uk"},
		{"apex/deep", limiter.KeyApex, "a.b.example.co.uk", netip.Addr{}, "example.co.uk"},
		{"apex/com", limiter.KeyApex, "www.example.com", netip.Addr{}, "example.com"},
		{"apex/is apex", limiter.KeyApex, "example.com", netip.Addr{}, "example.com"},
		{"apex/private suffix", limiter.KeyApex, "foo.bar.github.io", netip.Addr{}, "bar.github.io"},
		{"apex/punycode", limiter.KeyApex, "www.xn--bcher-kva.de", netip.Addr{}, "xn--bcher-kva.de"},
		{"apex/public suffix", limiter.KeyApex, "co.uk", netip.Addr{}, "co.uk"},
		{"apex/single label", limiter.KeyApex, "localhost", netip.Addr{}, "localhost"},
		{"apex/ipv4 literal", limiter.KeyApex, "192.0.2.7", netip.Addr{}, "192.0.2.7"},
		{"apex/ipv6 literal", limiter.KeyApex, "2001:db8::1", netip.Addr{}, "2001:db8::1"},
		{"ip/v4", limiter.KeyIP, "a.example.com", ip4, "192.0.2.7"},
		{"ip/v6", limiter.KeyIP, "a.example.com", ip6, "2001:db8::1"},
		{"ip/v4-mapped", limiter.KeyIP, "a.example.com", mapped, "192.0.2.7"},
		{"ip/unknown falls back to host", limiter.KeyIP, "a.example.com", netip.Addr{}, "a.example.com"},
		{"ip/literal host matches its address", limiter.KeyIP, "192.0.2.7", netip.Addr{}, "192.0.2.7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.fn(tt.host, tt.ip); got != tt.want {
				t.Errorf("key(%q, %v) = %q, want %q", tt.host, tt.ip, got, tt.want)
			}
		})
	}
}

func TestParseKeyFunc(t *testing.T) {
	for name, want := range map[string]string{"": "a.example.co.uk", "host": "a.example.co.uk", "apex": "example.co.uk", "ip": "192.0.2.7"} {
		fn, err := limiter.ParseKeyFunc(name)
		if err != nil {
			t.Fatalf("ParseKeyFunc(%q) = %v", name, err)
		}
		if got := fn("a.example.co.uk", netip.MustParseAddr("192.0.2.7")); got != want {
			t.Errorf("ParseKeyFunc(%q) key = %q, want %q", name, got, want)
		}
	}
	if _, err := limiter.ParseKeyFunc("domain"); err == nil {
		t.Error(`ParseKeyFunc("domain") = nil error, want one`)
	}
}

func ExampleKeyApex() {
	fmt.Println(limiter.KeyApex("a.b.example.co.uk", netip.Addr{}))
	// Output: example.co.uk
}
