package queue

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/host"
)

// Corpora beyond these seeds live in testdata/fuzz/<FuzzName>/.

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
		// Random bytes seldom make a valid item, so the fuzzed bytes are
		// also tried as the value of an unknown field and as the host.
		checkItemBytes(t, raw)
		checkItemBytes(t, slices.Concat([]byte(`{"host":"a.com","ts":1,"attempt":0,"x":`), raw, []byte("}")))
		checkItemBytes(t, slices.Concat([]byte(`{"host":`), jsonString(raw), []byte(`,"ts":-7,"attempt":2}`)))
	})
}

// checkItemBytes checks that the fast decoding path agrees with the general
// one on raw and, when raw decodes, that the item is normalised and
// survives an encode and decode unchanged, its encoding a fixed point.
func checkItemBytes(t *testing.T, raw []byte) {
	t.Helper()
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
	if h, err := host.Parse(string(it.Host)); h != it.Host || err != nil {
		t.Fatalf("DecodeItem(%q).Host = %q, not normalised (host.Parse = %q, %v)", raw, it.Host, h, err)
	}
	if it.Attempt < 0 {
		t.Fatalf("DecodeItem(%q).Attempt = %d, want >= 0", raw, it.Attempt)
	}
	if diff := cmp.Diff(compacted(t, it), it2); diff != "" {
		t.Fatalf("round trip of %q changed the item (-decoded +re-decoded):\n%s", raw, diff)
	}
	if enc2 := it2.Encode(); !bytes.Equal(enc, enc2) {
		t.Fatalf("encoding is not a fixed point: %s then %s", enc, enc2)
	}
}

// jsonString returns b as a JSON string (invalid UTF-8 becomes U+FFFD).
func jsonString(b []byte) []byte {
	out, _ := json.Marshal(string(b))
	return out
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
		// Random bytes seldom make a valid record, so the fuzzed bytes
		// are also tried as an item, as raw bytes (both encodings), as a
		// host, and as a lease ID and an error text.
		b64 := base64.StdEncoding.EncodeToString(line)
		str := jsonString(line)
		checkRecordLine(t, line)
		checkRecordLine(t, slices.Concat([]byte(`{"kind":"pending","item":`), line, []byte("}")))
		checkRecordLine(t, slices.Concat([]byte(`{"kind":"dead","raw":`), str, []byte(`,"error":"e","at":1}`)))
		checkRecordLine(t, []byte(`{"kind":"pending","raw_base64":"`+b64+`"}`))
		checkRecordLine(t, slices.Concat([]byte(`{"kind":"seen","host":`), str, []byte("}")))
		checkRecordLine(t, slices.Concat([]byte(`{"kind":"processing","item":{"host":"a.com","ts":1,"attempt":0},"lease":`),
			str, []byte(`,"deadline":1}`)))
		checkRecordLine(t, slices.Concat([]byte(`{"kind":"dead","item":{"host":"a.com"},"error":`), str, []byte(`,"at":-1}`)))
	})
}

// checkRecordLine checks that a line ParseRecord accepts is written back by
// the export writer as a line that parses to the same record, and that
// writing is a fixed point.
func checkRecordLine(t *testing.T, line []byte) {
	t.Helper()
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
	if (rec.Item == nil) != (rec2.Item == nil) {
		t.Fatalf("record item lost or gained through a line: %+v became %+v", rec, rec2)
	}
	if rec.Item != nil {
		if diff := cmp.Diff(compacted(t, *rec.Item), *rec2.Item); diff != "" {
			t.Fatalf("record item changed through a line (-parsed +re-parsed):\n%s", diff)
		}
	}
}

// compacted returns it with its extra values compacted, the form
// MarshalJSON writes them in.
func compacted(t *testing.T, it Item) Item {
	t.Helper()
	out := it
	out.Extra = nil
	for _, f := range it.Extra {
		var b bytes.Buffer
		if err := json.Compact(&b, f.Value); err != nil {
			t.Fatalf("extra field %q of a decoded item is not JSON: %v", f.Name, err)
		}
		out.Extra = append(out.Extra, Field{Name: f.Name, Value: b.Bytes()})
	}
	return out
}
