package queue_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/queue"
)

func badLines(t *testing.T, file string) ([]int, *queue.ImportError) {
	t.Helper()
	_, err := queue.ParseRecords(strings.NewReader(file))
	var ie *queue.ImportError
	if !errors.As(err, &ie) {
		t.Fatalf("ParseRecords() error = %v, want *ImportError", err)
	}
	var lines []int
	for _, l := range ie.Lines {
		lines = append(lines, l.Line)
	}
	return lines, ie
}

func TestParseRecords_Valid(t *testing.T) {
	file := "\ufeff" + strings.Join([]string{
		`{"kind":"pending","item":{"host":"A.com.","ts":1,"attempt":0,"x":[1]}}`,
		``,
		`{"kind":"processing","item":{"host":"b.com","ts":2,"attempt":1},"lease":"L1","deadline":1705312320123}`,
		`{"kind":"dead","raw":"junk","error":"bad","at":7}`,
		`{"kind":"dead","raw_base64":"/wA=","error":"","at":8}`,
		`{"kind":"pending","raw":"also junk"}`,
		`{"kind":"seen","host":"a.com"}`,
		`{"kind":"seen","host":"b.com","at":1705312200,"outcome":"http_503"}`,
	}, "\r\n") + "\r\n\n"
	recs, err := queue.ParseRecords(strings.NewReader(file))
	if err != nil {
		t.Fatalf("ParseRecords() error: %v", err)
	}
	want := []queue.Record{
		{Kind: "pending", Item: &queue.Item{Host: "a.com", TS: 1, Extra: []queue.Field{{Name: "x", Value: []byte(`[1]`)}}}},
		{Kind: "processing", Item: &queue.Item{Host: "b.com", TS: 2, Attempt: 1}, LeaseID: "L1", Deadline: time.UnixMilli(1705312320123)},
		{Kind: "dead", Raw: []byte("junk"), Error: "bad", At: 7},
		{Kind: "dead", Raw: []byte{0xff, 0}, At: 8},
		{Kind: "pending", Raw: []byte("also junk")},
		{Kind: "seen", Host: "a.com"},
		{Kind: "seen", Host: "b.com", At: 1705312200, Outcome: "http_503"},
	}
	if diff := cmp.Diff(want, recs); diff != "" {
		t.Errorf("ParseRecords() (-want +got):\n%s", diff)
	}
}

func TestParseRecords_BadLinesReportedByNumber(t *testing.T) {
	file := strings.Join([]string{
		`{"kind":"pending","item":{"host":"a.com","ts":1,"attempt":0}}`,  // 1 ok
		`{"kind":"pending","item":{"host":"a..com","ts":1,"attempt":0}}`, // 2 empty label
		`not json`,                  // 3
		`{"kind":"martian"}`,        // 4 unknown kind
		`{"item":{"host":"a.com"}}`, // 5 no kind
		`{"kind":"processing","item":{"host":"a.com"},"lease":"L"}`,              // 6 no deadline
		`{"kind":"processing","item":{"host":"a.com"},"lease":"L","deadline":1}`, // 7 ok
		`{"kind":"processing","item":{"host":"b.com"},"lease":"L","deadline":1}`, // 8 duplicate lease
		`{"kind":"dead","raw":"x","at":1}`,                                       // 9 no error
		`{"kind":"seen","host":"1.2.3.4"}`,                                       // 10 IP
		`{"kind":"seen","host":"a.com","item":{"host":"a.com"}}`,                 // 11 field of another kind
		`{"kind":"seen","host":"a.com","colour":"red"}`,                          // 12 unknown field
		`{"kind":"pending","item":{"host":"a.com"},"raw":"x"}`,                   // 13 item and raw
		`{"kind":"seen","host":"c.com"} {"kind":"seen","host":"d.com"}`,          // 14 two objects
		`{"kind":"seen","host":"e.com"}`,                                         // 15 ok
		`{"kind":"seen","host":"E.com"}`,                                         // 16 duplicate seen host
		`{"kind":"dead","raw_base64":"!!","error":"","at":1}`,                    // 17 bad base64
		`{"kind":"seen","host":"f.com","outcome":"ok"}`,                          // 18 outcome without at
		`{"kind":"seen","host":"g.com","at":1,"outcome":"two words"}`,            // 19 outcome not one word
		`{"kind":"seen","host":"h.com","at":1,"outcome":"ok"}`,                   // 20 ok
	}, "\n")
	lines, ie := badLines(t, file)
	want := []int{2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 16, 17, 18, 19}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("bad lines (-want +got):\n%s\n%v", diff, ie)
	}
	msg := ie.Error()
	for _, s := range []string{"line 2: ", "empty label", "line 8: ", `already on line 7`, "line 10: ", "IP address", "nothing applied"} {
		if !strings.Contains(msg, s) {
			t.Errorf("ImportError message lacks %q:\n%s", s, msg)
		}
	}
}

func TestParseRecords_ErrorListIsCapped(t *testing.T) {
	var b strings.Builder
	for range 50 {
		b.WriteString("junk\n")
	}
	lines, ie := badLines(t, b.String())
	if len(lines) != queue.MaxImportErrors || ie.Total != 50 {
		t.Errorf("ImportError lists %d of %d lines, want %d of 50", len(lines), ie.Total, queue.MaxImportErrors)
	}
	if want := fmt.Sprintf("and %d more", 50-queue.MaxImportErrors); !strings.Contains(ie.Error(), want) {
		t.Errorf("ImportError message lacks %q", want)
	}
}

func TestParseRecords_LongLines(t *testing.T) {
	big := strings.Repeat("x", 300_000) // far past bufio.Scanner's 64 KiB
	file := `{"kind":"pending","item":{"host":"a.com","ts":1,"attempt":0,"blob":"` + big + `"}}` + "\n" +
		`{"kind":"seen","host":"a.com"}`
	recs, err := queue.ParseRecords(strings.NewReader(file))
	if err != nil {
		t.Fatalf("ParseRecords(300 KB line) error: %v", err)
	}
	if len(recs) != 2 || len(recs[0].Item.Extra) != 1 || len(recs[0].Item.Extra[0].Value) != len(big)+2 {
		t.Errorf("ParseRecords(300 KB line) = %d records, want the item with its blob and the seen host", len(recs))
	}

	// Past the 16 MiB lines were once cut at: what an export of a large
	// garbage item in dead writes.
	huge := `{"kind":"dead","raw":"` + strings.Repeat("y", 17<<20) + `","error":"undecodable item","at":1}`
	recs, err = queue.ParseRecords(strings.NewReader(huge + "\n" + `{"kind":"seen","host":"a.com"}`))
	if err != nil || len(recs) != 2 || len(recs[0].Raw) != 17<<20 {
		t.Errorf("ParseRecords(17 MiB dead record) = %d records, %v; want it and the seen host", len(recs), err)
	}

	indented := strings.Repeat(" ", 100<<10) + `{"kind":"seen","host":"a.com"}`
	if recs, err := queue.ParseRecords(strings.NewReader(indented)); err != nil || len(recs) != 1 {
		t.Errorf("ParseRecords(record after 100 KiB of blanks) = %d records, %v; want 1", len(recs), err)
	}

	// A long line that is not JSON (a binary file given by mistake) is
	// refused without being kept whole.
	binary := strings.Repeat("\x00\xff", 5<<20)
	lines, ie := badLines(t, `{"kind":"seen","host":"a.com"}`+"\n"+binary+"\n"+"junk")
	if !cmp.Equal(lines, []int{2, 3}) {
		t.Errorf("bad lines with a 10 MiB binary line = %v, want [2 3] (the line numbers after it still right)", lines)
	}
	if !strings.Contains(ie.Error(), "not a JSON object") {
		t.Errorf("ImportError = %q, want the binary line called not a JSON object", ie.Error())
	}
}
