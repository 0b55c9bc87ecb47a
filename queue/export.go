package queue

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The export format is JSON lines, one [Record] per line, in [Queue.Dump]
// order (pending oldest first, then processing, dead, seen):
//
//	{"kind":"pending","item":{"host":"a.com","ts":1705312200,"attempt":0}}
//	{"kind":"processing","item":{...},"lease":"ID","deadline":1705312320000}
//	{"kind":"dead","item":{...},"error":"tls: timeout","at":1705312200}
//	{"kind":"dead","raw":"not json","error":"item is not a JSON object: …","at":1705312200}
//	{"kind":"seen","host":"a.com"}
//
// "item" is the item in its canonical encoding, [Item.MarshalJSON]: host,
// ts, attempt, then unknown fields in their original order, compacted. That
// is also the form every backend stores, so an exported file imported and
// exported again is byte-identical (an item pushed by hand with other
// spacing comes out canonical). "deadline" is Unix milliseconds, "at" Unix
// seconds. Bytes that are not an item are kept as "raw", a JSON string, or
// as "raw_base64" when they are not valid UTF-8; pending records may be raw
// too (an undecodable item pushed by hand, sent to dead when leased).

// MaxImportErrors is how many bad lines an [ImportError] lists; the rest are
// only counted.
const MaxImportErrors = 20

// maxLine bounds one import line. It is above the longest line an export
// writes (a 512 MB Redis value, the largest there is, as base64), so every
// export imports; and only lines that begin as JSON objects grow that far
// (see readLine), so a binary file given by mistake is refused without being
// read into memory.
const maxLine = 1 << 30

// Export writes every record of q to w as JSON lines (see the format above).
// It reads a consistent snapshot when the backend's Dump does.
func Export(ctx context.Context, q Queue, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf bytes.Buffer
	err := q.Dump(ctx, func(r Record) error {
		buf.Reset()
		if err := appendRecord(&buf, r); err != nil {
			return err
		}
		_, err := bw.Write(buf.Bytes())
		return err
	})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// appendRecord writes r as one line, newline included.
func appendRecord(b *bytes.Buffer, r Record) error {
	b.WriteString(`{"kind":`)
	writeString(b, r.Kind)
	switch r.Kind {
	case KindPending, KindProcessing, KindDead:
		switch {
		case r.Item != nil:
			item, err := r.Item.MarshalJSON()
			if err != nil {
				return err
			}
			b.WriteString(`,"item":`)
			b.Write(item)
		case r.Kind == KindProcessing:
			return fmt.Errorf("processing record %q has no item", r.LeaseID)
		case utf8.Valid(r.Raw):
			b.WriteString(`,"raw":`)
			writeString(b, string(r.Raw))
		default:
			b.WriteString(`,"raw_base64":"`)
			b.WriteString(base64.StdEncoding.EncodeToString(r.Raw))
			b.WriteByte('"')
		}
		switch r.Kind {
		case KindProcessing:
			b.WriteString(`,"lease":`)
			writeString(b, r.LeaseID)
			b.WriteString(`,"deadline":`)
			b.WriteString(strconv.FormatInt(r.Deadline.UnixMilli(), 10))
		case KindDead:
			b.WriteString(`,"error":`)
			writeString(b, r.Error)
			b.WriteString(`,"at":`)
			b.WriteString(strconv.FormatInt(r.At, 10))
		}
	case KindSeen:
		b.WriteString(`,"host":`)
		writeString(b, r.Host)
	default:
		return fmt.Errorf("unknown record kind %q", r.Kind)
	}
	b.WriteString("}\n")
	return nil
}

// ImportError reports the lines that made [Import] reject a file. Nothing
// was applied.
type ImportError struct {
	Lines []LineError // the first MaxImportErrors bad lines, in file order
	Total int         // how many lines were bad in all
}

// LineError is one bad line of an import file.
type LineError struct {
	Line int // 1-based
	Err  error
}

func (e *ImportError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "import: %d bad line(s), nothing applied", e.Total)
	for _, l := range e.Lines {
		fmt.Fprintf(&b, "\n  line %d: %v", l.Line, l.Err)
	}
	if more := e.Total - len(e.Lines); more > 0 {
		fmt.Fprintf(&b, "\n  and %d more", more)
	}
	return b.String()
}

// Import reads an export file from r and loads it into q, which must be
// empty. Every line is validated first (JSON, kind, required fields, hosts,
// items, duplicate leases or seen hosts); if any is bad Import returns an
// *ImportError listing them and changes nothing. Blank lines are skipped.
// It returns the number of records loaded; a non-empty q gives an error
// wrapping [ErrNotEmpty].
func Import(ctx context.Context, q Queue, r io.Reader) (int, error) {
	st, err := q.Stats(ctx)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	if st.Pending+st.Processing+st.Dead+st.Seen > 0 {
		return 0, fmt.Errorf("import: %w", ErrNotEmpty)
	}
	recs, err := ParseRecords(r)
	if err != nil {
		return 0, err
	}
	if err := q.Load(ctx, recs); err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	return len(recs), nil
}

// ParseRecords reads and validates a whole export file without loading it.
// Bad lines are reported together in an *ImportError; a read error is
// returned as is.
func ParseRecords(r io.Reader) ([]Record, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		recs   []Record
		bad    ImportError
		leases = map[string]int{}
		seen   = map[string]int{}
	)
	for n := 1; ; n++ {
		line, err := readLine(br)
		eof := errors.Is(err, io.EOF)
		if err != nil && !eof && !errors.Is(err, errLineTooLong) && !errors.Is(err, errNotObject) {
			return nil, fmt.Errorf("import: line %d: %w", n, err)
		}
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\ufeff"))
		}
		var lerr error
		switch {
		case errors.Is(err, errLineTooLong), errors.Is(err, errNotObject):
			lerr = err
		case len(bytes.TrimSpace(line)) > 0:
			var rec Record
			rec, lerr = ParseRecord(line)
			if lerr == nil {
				lerr = checkDuplicate(rec, n, leases, seen)
			}
			if lerr == nil {
				recs = append(recs, rec)
			}
		}
		if lerr != nil {
			bad.Total++
			if len(bad.Lines) < MaxImportErrors {
				bad.Lines = append(bad.Lines, LineError{Line: n, Err: lerr})
			}
		}
		if eof {
			break
		}
	}
	if bad.Total > 0 {
		return nil, &bad
	}
	return recs, nil
}

// checkDuplicate rejects a lease ID or seen host met before in the file,
// naming the earlier line.
func checkDuplicate(rec Record, n int, leases, seen map[string]int) error {
	var key string
	var m map[string]int
	switch rec.Kind {
	case KindProcessing:
		key, m = rec.LeaseID, leases
	case KindSeen:
		key, m = rec.Host, seen
	default:
		return nil
	}
	if prev, ok := m[key]; ok {
		return fmt.Errorf("%s %q already on line %d", rec.Kind, key, prev)
	}
	m[key] = n
	return nil
}

var (
	errLineTooLong = fmt.Errorf("line longer than %d bytes", maxLine)
	errNotObject   = errors.New("not a record: a long line that is not a JSON object")
)

// readLine returns the next line without its line ending. At the end of the
// input it returns the last (possibly empty) line with io.EOF. A line over
// maxLine, or over 64 KiB without beginning as a JSON object, is skipped to
// its end and reported as errLineTooLong or errNotObject.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	var bad error
	for {
		frag, err := br.ReadSlice('\n')
		if bad == nil {
			line = append(line, frag...)
			switch {
			case len(line) > maxLine+2:
				bad, line = errLineTooLong, nil
			case len(line) > 64<<10 && !beginsObject(line):
				bad, line = errNotObject, nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if bad != nil && (err == nil || errors.Is(err, io.EOF)) {
			return nil, bad
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		return line, err
	}
}

// beginsObject reports whether line, read so far, may still begin a JSON
// object: after blanks and a byte order mark comes "{" or nothing yet.
func beginsObject(line []byte) bool {
	t := bytes.TrimLeft(line, " \t\r\ufeff")
	return len(t) == 0 || t[0] == '{'
}

// exportLine is the JSON shape of one export line; pointers tell a missing
// member from a zero one.
type exportLine struct {
	Kind      string          `json:"kind"`
	Item      json.RawMessage `json:"item"`
	Raw       *string         `json:"raw"`
	RawBase64 *string         `json:"raw_base64"`
	Lease     *string         `json:"lease"`
	Deadline  *int64          `json:"deadline"`
	Error     *string         `json:"error"`
	At        *int64          `json:"at"`
	Host      *string         `json:"host"`
}

// ParseRecord decodes and validates one export line. Hosts are normalised
// (and rejected with the reason when invalid); fields that do not belong to
// the line's kind are errors, so that nothing in the file is silently
// dropped.
func ParseRecord(line []byte) (Record, error) {
	var l exportLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Record{}, fmt.Errorf("not a record: %w", err)
	}
	if dec.More() {
		return Record{}, errors.New("not a record: text after the JSON object")
	}
	rec := Record{Kind: l.Kind}
	var allowed []string
	switch l.Kind {
	case KindPending, KindDead:
		allowed = []string{"item", "raw", "raw_base64"}
		if l.Kind == KindDead {
			allowed = append(allowed, "error", "at")
			if l.Error == nil || l.At == nil {
				return Record{}, errors.New(`dead record needs "error" and "at"`)
			}
			rec.Error, rec.At = *l.Error, *l.At
		}
		var err error
		switch {
		case countSet(l.Item != nil, l.Raw != nil, l.RawBase64 != nil) != 1:
			return Record{}, fmt.Errorf(`%s record needs exactly one of "item", "raw", "raw_base64"`, l.Kind)
		case l.Item != nil:
			rec.Item, err = decodeRecordItem(l.Item)
		case l.Raw != nil:
			rec.Raw = []byte(*l.Raw)
		default:
			rec.Raw, err = base64.StdEncoding.DecodeString(*l.RawBase64)
		}
		if err != nil {
			return Record{}, err
		}
	case KindProcessing:
		allowed = []string{"item", "lease", "deadline"}
		if l.Item == nil || l.Lease == nil || l.Deadline == nil {
			return Record{}, errors.New(`processing record needs "item", "lease" and "deadline"`)
		}
		if *l.Lease == "" {
			return Record{}, errors.New(`processing record has an empty "lease"`)
		}
		if *l.Deadline <= 0 {
			return Record{}, fmt.Errorf(`processing record "deadline" %d is not Unix milliseconds`, *l.Deadline)
		}
		it, err := decodeRecordItem(l.Item)
		if err != nil {
			return Record{}, err
		}
		rec.Item, rec.LeaseID = it, *l.Lease
		rec.Deadline = time.UnixMilli(*l.Deadline)
	case KindSeen:
		allowed = []string{"host"}
		if l.Host == nil {
			return Record{}, errors.New(`seen record needs "host"`)
		}
		h, err := NormalizeHost(*l.Host)
		if err != nil {
			return Record{}, err
		}
		rec.Host = h
	case "":
		return Record{}, errors.New(`record has no "kind"`)
	default:
		return Record{}, fmt.Errorf("unknown record kind %q", l.Kind)
	}
	if f := extraField(l, allowed); f != "" {
		return Record{}, fmt.Errorf("%s record cannot have %q", l.Kind, f)
	}
	return rec, nil
}

func decodeRecordItem(raw json.RawMessage) (*Item, error) {
	it, err := DecodeItem(raw)
	if err != nil {
		return nil, err
	}
	return &it, nil
}

// extraField names the first member of l set but not allowed for its kind.
func extraField(l exportLine, allowed []string) string {
	set := []struct {
		name string
		ok   bool
	}{
		{"item", l.Item != nil}, {"raw", l.Raw != nil}, {"raw_base64", l.RawBase64 != nil},
		{"lease", l.Lease != nil}, {"deadline", l.Deadline != nil}, {"error", l.Error != nil},
		{"at", l.At != nil}, {"host", l.Host != nil},
	}
	for _, f := range set {
		if !f.ok {
			continue
		}
		found := false
		for _, a := range allowed {
			found = found || a == f.name
		}
		if !found {
			return f.name
		}
	}
	return ""
}

func countSet(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
