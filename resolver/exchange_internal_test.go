package resolver

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
