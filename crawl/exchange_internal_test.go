package crawl

import (
	"bytes"
	"testing"

	"github.com/miekg/dns"
)

// TestQuestions_PackedAsMessages: each query a socket sends is, byte for
// byte, the message miekg/dns packs for that name, type and ID.
func TestQuestions_PackedAsMessages(t *testing.T) {
	for _, host := range []string{"example.com", "a.b.c.d.example.co.uk.", "xn--bcher-kva.example", "x"} {
		qs, err := newQuestions(host, lookupTypes)
		if err != nil {
			t.Fatal(err)
		}
		ids := []uint16{1, 0xbeef, 7, 0xffff, 300, 0}
		for i, w := range qs.pack(ids) {
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(host), lookupTypes[i])
			m.RecursionDesired = true
			m.SetEdns0(udpSize, false)
			m.Id = ids[i]
			want, err := m.Pack()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(w, want) {
				t.Errorf("%s %s: packed\n%x\nwant\n%x", host, dns.TypeToString[lookupTypes[i]], w, want)
			}
		}
	}
}

// TestLookup_UsefulAsWant: a server is useful exactly when some question
// is still to be sent to it.
func TestLookup_UsefulAsWant(t *testing.T) {
	answer := new(dns.Msg)
	cases := []struct {
		name  string
		final []*dns.Msg
		badAt [][]int
	}{
		{"nothing answered", []*dns.Msg{nil, nil}, [][]int{nil, nil}},
		{"all answered", []*dns.Msg{answer, answer}, [][]int{nil, nil}},
		{"one left, failed at server 0", []*dns.Msg{answer, nil}, [][]int{nil, {0}}},
		{"failed at both", []*dns.Msg{nil, nil}, [][]int{{0, 1}, {1, 0}}},
		{"failed at 1, answered the other", []*dns.Msg{nil, answer}, [][]int{{1}, {0, 1}}},
	}
	for _, c := range cases {
		l := &lookup{final: c.final, badAt: c.badAt}
		for u := range 2 {
			if got, want := l.useful(u), len(l.want(u)) > 0; got != want {
				t.Errorf("%s: useful(%d) = %v, want %v (want(%d) = %v)", c.name, u, got, want, u, l.want(u))
			}
		}
	}
}
