package resolver_test

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/resolver"
)

func TestParseServers(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "192.0.2.1:53", want: []string{"192.0.2.1:53"}},
		{in: "192.0.2.1", want: []string{"192.0.2.1:53"}},
		{in: "192.0.2.1:5353, 198.51.100.2 ,,", want: []string{"192.0.2.1:5353", "198.51.100.2:53"}},
		{in: "[2001:db8::53]:5353", want: []string{"[2001:db8::53]:5353"}},
		{in: "[2001:DB8::53]", want: []string{"[2001:db8::53]:53"}},
		{in: "2001:db8::53", want: []string{"[2001:db8::53]:53"}},
		{in: "::1,127.0.0.1,[::1]:53", want: []string{"[::1]:53", "127.0.0.1:53"}},
		{in: "dns.example:53", want: []string{"dns.example:53"}},
		{in: "", wantErr: "no server given"},
		{in: " , ", wantErr: "no server given"},
		{in: "dns.example", wantErr: `resolver "dns.example": want IP`},
		{in: "192.0.2.1:0", wantErr: `port "0"`},
		{in: "192.0.2.1:dns", wantErr: `port "dns"`},
		{in: "192.0.2.1:53,[::1", wantErr: `resolver "[::1"`},
		{in: ":53", wantErr: `resolver ":53"`},
	}
	for _, tt := range tests {
		got, err := resolver.ParseServers(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseServers(%q) = %v, %v; want error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseServers(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestClient_Check(t *testing.T) {
	w := crawltest.Start(t, crawltest.Options{Hosts: 5, Seed: 45})
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	newClient := func(servers string) *resolver.Client {
		r, err := resolver.New(resolver.Config{Servers: servers, Timeout: 200 * time.Millisecond, Retries: 1})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	known := host.Name(w.Seeds[0])
	working, dead := newClient(w.Resolver), newClient(silent.LocalAddr().String())
	for _, name := range []host.Name{known, "no-such-name-anywhere.com", ""} {
		if err := working.Check(t.Context(), name); err != nil {
			t.Errorf("Check(%q) on the world's resolver = %v, want nil", name, err)
		}
	}
	for _, name := range []host.Name{known, ""} {
		err := dead.Check(t.Context(), name)
		if err == nil || !strings.Contains(err.Error(), silent.LocalAddr().String()) || !strings.Contains(err.Error(), "does not answer") {
			t.Errorf("Check(%q) on a silent resolver = %v, want an error naming it", name, err)
		}
	}
}
