package host

import (
	"errors"
	"strings"
	"testing"
)

// Corpora beyond these seeds live in testdata/fuzz/FuzzParse/.

// FuzzParse checks that the fast path and the full parser agree, that parsing
// is idempotent and that the ways one host is written parse alike.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a.com", "Example.COM.", "bücher.de", "https://a.com:8/x", "1.2.3.4", "[::1]:80",
		"a..b", "_x.a.com", "a.123", "xn--bcher-kva.de", "\ufeffa.com", "//a.com", "a.com:", " a.com\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := Parse(in)
		slow, serr := parse(in)
		if string(got) != slow || (err == nil) != (serr == nil) {
			t.Fatalf("Parse(%q) = %q, %v; full path gives %q, %v", in, got, err, slow, serr)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrInvalid", in, err)
			}
			return
		}
		if !isCanonical(string(got)) && !strings.Contains(string(got), "xn--") {
			t.Fatalf("Parse(%q) = %q, which the fast path would not accept", in, got)
		}
		if len(got) > 253 {
			t.Fatalf("Parse(%q) = %q, %d bytes; want at most 253", in, got, len(got))
		}
		if again, err := parse(string(got)); again != string(got) || err != nil {
			t.Fatalf("parse(%q) = %q, %v; want it unchanged (idempotent)", got, again, err)
		}
		// The same host written the ways users and pages write it
		// normalises to the same name.
		for _, v := range []string{strings.ToUpper(string(got)) + ".", "https://" + string(got) + ":443/p?q#f", "//" + string(got) + "/", " " + string(got) + ":80\n"} {
			if again, err := Parse(v); again != got || err != nil {
				t.Fatalf("Parse(%q) = %q, %v; want %q (from %q)", v, again, err, got, in)
			}
		}
	})
}
