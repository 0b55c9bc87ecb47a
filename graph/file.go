package graph

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/spyder-crawler/spyder"
)

// fileReader reads one file: one goroutine splits it into chunks of
// lines, GOMAXPROCS goroutines decode the chunks (JSON decoding is most of
// the time spent), and the caller's goroutine takes the results in file
// order, keeping the file's format (set by its first valid line) to tell
// a mixed-format line, and its problem counts.
type fileReader struct {
	name   string
	warn   io.Writer
	probs  *Problems
	format format
	valid  int
	lines  int // lines read so far
	filled int // lines read that were not blank
	shown  map[Kind]int
	head   spyder.Batch // the lines format's last batch line
}

// chunk is a run of lines and, once decoded, what they gave.
type chunk struct {
	first int      // number of the first line
	lines [][]byte // non-empty lines, trimmed; nil entries are blank lines
	bad   *decoded // a read problem after the lines (a line too long, a cut gzip stream)
	err   error    // a read error that ends the file
	out   []decoded
	done  chan struct{}
}

const chunkBytes = 1 << 20

func (fr *fileReader) read(in io.Reader, fn func(*spyder.Batch) error) error {
	br := bufio.NewReaderSize(in, 1<<20)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			fr.problem(0, Truncated, fmt.Sprintf("gzip header: %v", err))
			return nil
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<20)
	}
	stop := make(chan struct{})
	defer close(stop)
	order := make(chan *chunk, 4*runtime.GOMAXPROCS(0))
	jobs := make(chan *chunk, 2*runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				c.out = make([]decoded, 0, len(c.lines))
				for i, l := range c.lines {
					if l != nil {
						c.out = append(c.out, decodeLine(c.first+i, l))
					}
				}
				close(c.done)
			}
		}()
	}
	go split(br, order, jobs, stop)
	defer wg.Wait()
	for c := range order {
		<-c.done
		if err := fr.take(c, fn); err != nil {
			return err
		}
	}
	if fr.filled == 0 {
		fr.problem(0, Empty, "empty file (no line that is not blank)")
	}
	fr.probs.Valid += fr.valid
	return nil
}

// take handles one decoded chunk in order.
func (fr *fileReader) take(c *chunk, fn func(*spyder.Batch) error) error {
	fr.lines = c.first + len(c.lines) - 1
	fr.filled += len(c.out)
	if c.bad != nil {
		fr.filled++
	}
	for _, d := range c.out {
		if d.kind != "" {
			fr.problem(d.line, d.kind, d.msg)
			continue
		}
		if fr.format == formatNone {
			fr.format = d.format
		} else if d.format != fr.format {
			fr.problem(d.line, Mixed, fmt.Sprintf("an %s-format line in a %s-format file (mixed formats); read anyway", d.format, fr.format))
		}
		fr.valid++
		if d.format == formatLines && !fr.fromHead(&d.rec.Batch, d.rec.Kind) {
			continue
		}
		if err := fn(&d.rec.Batch); err != nil {
			return err
		}
	}
	if c.bad != nil {
		fr.lines = max(fr.lines, c.bad.line)
		fr.problem(c.bad.line, c.bad.kind, c.bad.msg)
	}
	if c.err != nil && fr.lines == 0 {
		return fmt.Errorf("graph input %s: %w", fr.name, c.err)
	} else if c.err != nil {
		return fmt.Errorf("graph input %s: after line %d: %w", fr.name, fr.lines, c.err)
	}
	return nil
}

// split reads lines into chunks of about chunkBytes, sending each to
// order (for the consumer) and jobs (for a decoder) until the file ends or
// stop closes.
func split(br *bufio.Reader, order, jobs chan<- *chunk, stop <-chan struct{}) {
	defer close(order)
	defer close(jobs)
	n, size := 0, 0
	c := &chunk{first: 1, done: make(chan struct{})}
	send := func() bool {
		select {
		case order <- c:
		case <-stop:
			return false
		}
		select {
		case jobs <- c:
		case <-stop:
			return false
		}
		c, size = &chunk{first: n + 1, done: make(chan struct{})}, 0
		return true
	}
	for {
		line, err := readLine(br)
		if len(line) > 0 || err == nil || errors.Is(err, errLineTooLong) {
			n++
			c.lines = append(c.lines, line)
			size += len(line)
		}
		switch {
		case err == nil:
			if size >= chunkBytes && !send() {
				return
			}
			continue
		case err == io.EOF:
		case errors.Is(err, errLineTooLong):
			c.lines[len(c.lines)-1] = nil
			c.bad = &decoded{line: n, kind: TooLong, msg: fmt.Sprintf("line longer than %d bytes, skipped", MaxLine)}
			if !send() {
				return
			}
			continue
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum):
			c.bad = &decoded{line: n, kind: Truncated, msg: fmt.Sprintf("compressed stream ends early (%v)", err)}
		default:
			c.err = err
		}
		send()
		return
	}
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its end of line and surrounding
// blanks, in a new slice (nil for a blank line). A line longer than
// MaxLine is consumed and errLineTooLong returned.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > MaxLine {
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err == nil || err == io.EOF {
				return nil, errLineTooLong
			}
			return nil, err
		}
		if err == bufio.ErrBufferFull {
			buf = append(buf, frag...)
			continue
		}
		if buf == nil {
			frag = bytes.TrimSpace(frag)
			if len(frag) == 0 {
				return nil, err
			}
			return bytes.Clone(frag), err
		}
		buf = bytes.TrimSpace(append(buf, frag...))
		if len(buf) == 0 {
			return nil, err
		}
		return buf, err
	}
}

// problem counts one bad line and reports it, up to shownPerKind per file
// and kind; the rest are counted in the summary line.
func (fr *fileReader) problem(line int, k Kind, msg string) {
	fr.probs.add(fr.name, k)
	if fr.warn == nil {
		return
	}
	if fr.shown == nil {
		fr.shown = make(map[Kind]int)
	}
	fr.shown[k]++
	switch n := fr.shown[k]; {
	case n <= shownPerKind:
		where := fr.name
		if line > 0 {
			where = fmt.Sprintf("%s:%d", fr.name, line)
		}
		fmt.Fprintf(fr.warn, "spyder graph: %s: %s\n", where, msg)
	case n == shownPerKind+1:
		fmt.Fprintf(fr.warn, "spyder graph: %s: more lines like that (%s); counted, not shown\n", fr.name, k)
	}
}

// fromHead keeps a lines-format batch line as the header of the item lines
// after it and reports false; an item line of that batch gets its probe,
// run and time, and true.
func (fr *fileReader) fromHead(b *spyder.Batch, kind string) bool {
	if kind == "batch" {
		fr.head = spyder.Batch{ProbeID: b.ProbeID, RunID: b.RunID, BatchID: b.BatchID, Timestamp: b.Timestamp}
		return false
	}
	if b.BatchID == fr.head.BatchID {
		b.ProbeID, b.RunID, b.Timestamp = fr.head.ProbeID, fr.head.RunID, fr.head.Timestamp
	}
	return true
}
