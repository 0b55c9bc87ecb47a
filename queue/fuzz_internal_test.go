package queue

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Corpora beyond these seeds live in testdata/fuzz/<FuzzName>/.

func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{"a.com", "Example.COM.", "bücher.de", "https://a.com:8/x", "1.2.3.4", "[::1]:80",
		"a..b", "_x.a.com", "a.123", "xn--bcher-kva.de", "\ufeffa.com", "//a.com", "a.com:", " a.com\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := NormalizeHost(in)
		slow, serr := normalizeHost(in)
		if got != slow || (err == nil) != (serr == nil) {
			t.Fatalf("NormalizeHost(%q) = %q, %v; full path gives %q, %v", in, got, err, slow, serr)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidHost) {
				t.Fatalf("NormalizeHost(%q) error %v does not wrap ErrInvalidHost", in, err)
			}
			return
		}
		if !isCanonicalHost(got) && !strings.Contains(got, "xn--") {
			t.Fatalf("NormalizeHost(%q) = %q, which the fast path would not accept", in, got)
		}
		if again, err := normalizeHost(got); again != got || err != nil {
			t.Fatalf("normalizeHost(%q) = %q, %v; want it unchanged (idempotent)", got, again, err)
		}
	})
}

func FuzzDecodeItem(f *testing.F) {
	for _, s := range []string{
		`{"host":"a.com","ts":1,"attempt":0}`,
		`{"host":"a.com","ts":-1705312200,"attempt":3,"x":[1,{"y":null}]}`,
		`{"host":"A.com.","ts":1}`,
		`{"host":"a.com","ts":01,"attempt":0}`,
		`{"host":"a.com","ts":1,"attempt":0,"attempt":1}`,
		`{"ho\u0073t":"a.com"}`,
		`{"host":"a\"b.com","ts":1,"attempt":0}`,
		`null`, `[]`, `{"host":5}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if fast, ok := decodeCanonical(raw); ok {
			var slow Item
			if err := slow.unmarshalGeneral(raw); err != nil {
				t.Fatalf("decodeCanonical(%q) accepted what the general path rejects: %v", raw, err)
			}
			if diff := cmp.Diff(slow, fast); diff != "" {
				t.Fatalf("decodeCanonical(%q) differs from the general path (-general +fast):\n%s", raw, diff)
			}
		}
		it, err := DecodeItem(raw)
		if err != nil {
			return
		}
		enc, err := it.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON of decoded %q: %v", raw, err)
		}
		it2, err := DecodeItem(enc)
		if err != nil {
			t.Fatalf("DecodeItem(Encode(DecodeItem(%q))) = %v", raw, err)
		}
		if it2.Host != it.Host || it2.TS != it.TS || it2.Attempt != it.Attempt || len(it2.Extra) != len(it.Extra) {
			t.Fatalf("round trip of %q: %+v became %+v", raw, it, it2)
		}
		if enc2 := it2.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not a fixed point: %s then %s", enc, enc2)
		}
	})
}

func FuzzParseRecord(f *testing.F) {
	for _, s := range []string{
		`{"kind":"pending","item":{"host":"a.com","ts":1,"attempt":0}}`,
		`{"kind":"processing","item":{"host":"a.com","ts":1,"attempt":0,"x":1},"lease":"0000000000000001","deadline":1705312320000}`,
		`{"kind":"dead","item":{"host":"a.com","ts":1,"attempt":3},"error":"boom","at":1705312200}`,
		`{"kind":"dead","raw":"not json","error":"undecodable","at":1}`,
		`{"kind":"dead","raw_base64":"/w==","error":"","at":1}`,
		`{"kind":"pending","raw":"{\"host\":\"-\"}"}`,
		`{"kind":"seen","host":"B.com."}`,
		`{"kind":"seen","host":"a.com","lease":"x"}`,
		`{"kind":"nope"}`, `{}`, `[]`, `{"kind":"pending"} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, err := ParseRecord(line)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := appendRecord(&b, rec); err != nil {
			t.Fatalf("appendRecord(ParseRecord(%q)): %v", line, err)
		}
		out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		rec2, err := ParseRecord(out)
		if err != nil {
			t.Fatalf("ParseRecord(%s) of a written record: %v", out, err)
		}
		var b2 bytes.Buffer
		if err := appendRecord(&b2, rec2); err != nil {
			t.Fatalf("appendRecord: %v", err)
		}
		if !bytes.Equal(b.Bytes(), b2.Bytes()) {
			t.Fatalf("record lines are not a fixed point:\n%s%s", b.Bytes(), b2.Bytes())
		}
		if rec.Kind != rec2.Kind || rec.LeaseID != rec2.LeaseID || !rec.Deadline.Equal(rec2.Deadline) ||
			rec.Error != rec2.Error || rec.At != rec2.At || rec.Host != rec2.Host || !bytes.Equal(rec.Raw, rec2.Raw) {
			t.Fatalf("record changed through a line: %+v became %+v", rec, rec2)
		}
	})
}
