package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// The hostile-input tests of each backend write what spyder never writes
// into the keys or buckets it owns and check that the store copes. What
// they write and what they check afterwards is the same for every backend
// and lives here; how they write it is each backend's own.

// GoodHosts are the n hosts a hostile-input test seeds beside the garbage.
func GoodHosts(n int) []string {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("good%02d.example.com", i)
	}
	return hosts
}

// HostileItem is bytes put where a pending item belongs, and what a store
// must make of them: dead with Reason in its error, or (Reason "") leased
// and acked like any item of Host.
type HostileItem struct {
	Name   string
	Raw    []byte
	Reason string
	Host   string
}

// HostileItems are random bytes, truncated JSON, wrong JSON types, an
// invalid host, 1 MB and 16 MB of garbage, and a valid 1 MB item.
func HostileItems() []HostileItem {
	dead := func(name, raw, reason string) HostileItem {
		return HostileItem{Name: name, Raw: []byte(raw), Reason: reason}
	}
	return []HostileItem{
		{Name: "RandomBytes", Raw: RandomBytes(300, 1), Reason: "undecodable item"},
		dead("TruncatedJSON", `{"host":"cut.example.com","ts":17`, "not a JSON object"),
		dead("HostNumber", `{"host":5}`, `"host" must be a non-empty string`),
		dead("Array", `[]`, "not a JSON object"),
		dead("String", `"x"`, "not a JSON object"),
		dead("Null", `null`, "item is null"),
		dead("Empty", ``, "undecodable item"),
		dead("BadHost", `{"host":"not a host","ts":1,"attempt":0}`, "invalid host"),
		dead("NegativeAttempt", `{"host":"a.example.com","attempt":-1}`, `"attempt" must be a non-negative integer`),
		{Name: "1MBGarbage", Raw: RandomBytes(1<<20, 2), Reason: "undecodable item"},
		{Name: "16MBGarbage", Raw: bytes.Repeat([]byte("{"), 16<<20), Reason: "undecodable item"},
		{Name: "1MBValidItem", Host: "huge.example.com",
			Raw: []byte(`{"host":"huge.example.com","ts":1,"attempt":0,"pad":"` + strings.Repeat("x", 1<<20) + `"}`)},
	}
}

// RandomBytes is n bytes drawn from seed.
func RandomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// CheckDrained checks a queue after Drain returned acked: every one of good
// and extra acked once and no other host; dead holding exactly deadRaw
// (with reason in its error), or nothing when deadRaw is nil.
func CheckDrained(tb testing.TB, q queue.Queue, acked map[string]int, good, extra []string, deadRaw []byte, reason string) {
	tb.Helper()
	for _, h := range append(append([]string(nil), good...), extra...) {
		if acked[h] != 1 {
			tb.Errorf("%s acked %d times, want 1", h, acked[h])
		}
	}
	if want := len(good) + len(extra); len(acked) != want {
		tb.Errorf("acked %d hosts, want %d", len(acked), want)
	}
	dead, err := q.Dead(context.Background(), 0)
	if err != nil {
		tb.Fatalf("Dead() error: %v", err)
	}
	clip := func(b []byte) []byte { return b[:min(len(b), 40)] }
	switch {
	case deadRaw == nil && len(dead) != 0:
		tb.Errorf("Dead() = %d items (%q…), want none", len(dead), clip(dead[0].Raw))
	case deadRaw != nil && len(dead) != 1:
		tb.Errorf("Dead() = %d items, want 1", len(dead))
	case deadRaw != nil:
		if !bytes.Equal(dead[0].Raw, deadRaw) {
			tb.Errorf("dead item bytes = %q…, want the injected %q…", clip(dead[0].Raw), clip(deadRaw))
		}
		if !strings.Contains(dead[0].Error, reason) {
			tb.Errorf("dead item error = %q, want it to say %q", dead[0].Error, reason)
		}
	}
}

// ExportImports exports q and reads the export back as Import does, failing
// tb unless every line is a record, even of the garbage above; the one
// refusal allowed is a seen "host" that is not a host name, which Import
// refuses by design, naming its line. It returns how many lines were
// written.
func ExportImports(tb testing.TB, q queue.Queue) int64 {
	tb.Helper()
	var out bytes.Buffer
	if err := queue.Export(context.Background(), q, &out); err != nil {
		tb.Fatalf("Export() error: %v", err)
	}
	lines := int64(bytes.Count(out.Bytes(), []byte("\n")))
	_, err := queue.ParseRecords(&out)
	var ie *queue.ImportError
	switch {
	case errors.As(err, &ie):
		for _, le := range ie.Lines {
			if !errors.Is(le.Err, host.ErrInvalid) {
				tb.Errorf("the export does not import: line %d: %v", le.Line, le.Err)
			}
		}
	case err != nil:
		tb.Errorf("the export does not import: %v", err)
	}
	return lines
}
