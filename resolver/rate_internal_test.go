package resolver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClient_Rate: with Config.Rate, the queries to all servers keep to
// the token bucket's bound: in any span d between two queries, at most a
// burst plus Rate·d of them arrive (a few more allowed for the jitter
// between the limiter's grant and the server's clock).
func TestClient_Rate(t *testing.T) {
	const perSecond = 100
	ps := startPortServer(t)
	r := mustNew(t, Config{Servers: ps.addr, Timeout: 2 * time.Second, Retries: 2, Rate: perSecond})
	lookups(t, r, 40, 16) // 200 queries: two seconds at least
	ps.mu.Lock()
	times := ps.times
	ps.mu.Unlock()
	if len(times) < 200 {
		t.Fatalf("the server saw %d queries, want at least 200", len(times))
	}
	const slack = perSecond / 4 // a quarter second of jitter between grant and arrival
	for i := range times {
		for j := i + 1; j < len(times); j++ {
			d := times[j].Sub(times[i]).Seconds()
			if n := j - i + 1; float64(n) > perSecond+perSecond*d+slack {
				t.Fatalf("%d queries within %.3fs at Rate %d (burst %d): over the bound", n, d, perSecond, perSecond)
			}
		}
	}
}

// TestSystemServers: every nameserver of a resolv.conf is used, in order.
func TestSystemServers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "resolv.conf")
	os.WriteFile(p, []byte("# x\nnameserver 192.0.2.1\nnameserver 2001:db8::53\noptions ndots:1\n"), 0o644)
	got, err := systemServers(p)
	if want := "192.0.2.1:53,[2001:db8::53]:53"; err != nil || got != want {
		t.Errorf("systemServers = %q, %v; want %q", got, err, want)
	}
}

// TestServersFrom: a server list is taken as it is; a file gives the
// servers it lists (comments and blank lines skipped); a bad line is an
// error naming the file and line; a path (it has a /, or exists) that
// cannot be read says so, naming the path once; a value that is neither a
// list nor a path is the list's error.
func TestServersFrom(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "resolvers.txt")
	os.WriteFile(good, []byte("# public\n192.0.2.1\n\n192.0.2.2:5353, [2001:db8::1]  # two\n"), 0o644)
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("192.0.2.1\nnot a server\n"), 0o644)
	tests := []struct{ in, want, err string }{
		{"192.0.2.9", "192.0.2.9", ""},
		{good, "192.0.2.1:53,192.0.2.2:5353,[2001:db8::1]:53", ""},
		{bad, "", "resolver file " + bad + ": line 2: "},
		{"missing.txt", "", "want IP, host:port"},
		{filepath.Join(dir, "missing.txt"), "", "resolver file " + filepath.Join(dir, "missing.txt") + " could not be read: no such file or directory"},
		{"/etc/no-such-resolvers.txt", "", "resolver file /etc/no-such-resolvers.txt could not be read: no such file or directory"},
		{dir, "", "resolver file " + dir + " could not be read: is a directory"},
	}
	for _, tt := range tests {
		got, err := ServersFrom(tt.in)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ServersFrom(%q) = %q, %v; want %q, error with %q", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && strings.Count(err.Error(), tt.in) > 1 {
			t.Errorf("ServersFrom(%q): %v names it more than once", tt.in, err)
		}
	}
}

// TestClient_RateRefusalIsATimeout: a query the rate would send only past
// the lookup's deadline is refused at once as a timeout, the status the
// crawler's HTTP side gives the same refusal, not as an error.
func TestClient_RateRefusalIsATimeout(t *testing.T) {
	r := mustNew(t, Config{Servers: "127.0.0.1:53", Rate: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := r.awaitRate(ctx, 3) // the second and third need two more seconds
	if !isTimeout(err) {
		t.Errorf("awaitRate past the deadline = %v, want a timeout", err)
	}
}
