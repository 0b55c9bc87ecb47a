package queue

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxImportErrors is how many bad lines an [ImportError] lists; the rest are
// only counted.
const MaxImportErrors = 20

// maxLine bounds one import line. It is above the longest line an export
// writes (a 512 MB Redis value, the largest there is, as base64), so every
// export imports; and only lines that begin as JSON objects grow that far
// (see readLine), so a binary file given by mistake is refused without being
// read into memory.
const maxLine = 1 << 30

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
	fmt.Fprintf(&b, "%d bad line(s), nothing applied", e.Total)
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
		return 0, err
	}
	if st.Pending+st.Processing+st.Dead+st.Seen > 0 {
		return 0, ErrNotEmpty
	}
	recs, err := ParseRecords(r)
	if err != nil {
		return 0, err
	}
	if err := q.Load(ctx, recs); err != nil {
		return 0, err
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
			return nil, fmt.Errorf("line %d: %w", n, err)
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
		key, m = string(rec.Host), seen
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
