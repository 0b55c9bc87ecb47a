// Package sink holds the output side of a crawl: the [Batcher] that groups
// visit results into batches without repeating a node or edge of the run,
// and the sinks that make a batch durable: JSON lines on a writer or a
// file (fsynced), an HTTP ingest endpoint with a spool in the store, and
// several of them at once. A worker acknowledges its host only once the
// batch holding its result is durable, so nothing acknowledged is lost.
package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/metrics"
	"github.com/spyder-crawler/spyder/store"
)

// Sink receives batches. WriteBatch returns only once the batch is durable
// (written, delivered or spooled), since workers acknowledge their hosts
// after it returns.
type Sink interface {
	WriteBatch(ctx context.Context, b *spyder.Batch) error
}

// Output formats of [JSONSink].
const (
	FormatBatch = "batch" // one Batch object per line, the older spyder's schema
	FormatEdges = "edges" // one Edge object per line
	FormatLines = "lines" // one object per node, edge and probe outcome, each with a "kind"
	FormatHosts = "hosts" // one [spyder.HostRecord] per visited host, whole (see [BatcherConfig.Hosts])
)

// Formats are the output formats of [JSONSink], in the order help lists them.
var Formats = []string{FormatBatch, FormatEdges, FormatLines, FormatHosts}

// JSONSink writes batches as JSON lines to a writer. It is safe for
// concurrent use; each batch is written with a single Write call.
type JSONSink struct {
	mu     sync.Mutex
	w      io.Writer
	format string
	buf    bytes.Buffer
}

var _ Sink = (*JSONSink)(nil)

// ErrFormat is returned by [NewJSONSink] for a format it does not know.
var ErrFormat = errors.New("unknown output format")

// NewJSONSink returns a sink writing to w in format ([FormatBatch],
// [FormatEdges], [FormatLines] or [FormatHosts]; "" means FormatBatch). When w has a Sync method (an
// *os.File), WriteBatch calls it, so a batch is on disk when it returns.
func NewJSONSink(w io.Writer, format string) (*JSONSink, error) {
	switch format {
	case "":
		format = FormatBatch
	case FormatBatch, FormatEdges, FormatLines, FormatHosts:
	default:
		return nil, fmt.Errorf("%w %q (want %s)", ErrFormat, format, strings.Join(Formats, ", "))
	}
	return &JSONSink{w: w, format: format}, nil
}

// WriteBatch implements [Sink].
func (s *JSONSink) WriteBatch(_ context.Context, b *spyder.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Reset()
	enc := json.NewEncoder(&s.buf)
	enc.SetEscapeHTML(false)
	switch s.format {
	case FormatEdges:
		for i := range b.Edges {
			if err := enc.Encode(&b.Edges[i]); err != nil {
				return fmt.Errorf("encode edge: %w", err)
			}
		}
	case FormatLines:
		if err := encodeLines(enc, b); err != nil {
			return err
		}
	case FormatHosts:
		for i := range b.Hosts {
			if err := enc.Encode(&b.Hosts[i]); err != nil {
				return fmt.Errorf("encode host: %w", err)
			}
		}
	default:
		if err := enc.Encode(b); err != nil {
			return fmt.Errorf("encode batch: %w", err)
		}
	}
	if s.buf.Len() == 0 {
		return nil
	}
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return fmt.Errorf("write batch: %w", diskRefuses(err))
	}
	if f, ok := s.w.(interface{ Sync() error }); ok {
		// Pipes and terminals cannot be synced; that is not an error.
		if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
			return fmt.Errorf("sync output: %w", diskRefuses(err))
		}
	}
	return nil
}

// diskRefuses marks err as [store.ErrWritesRefused] when it says the disk
// takes no write until someone acts: full, over quota, read-only, past the
// file size limit or failing. Every later batch would fail alike.
func diskRefuses(err error) error {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EFBIG, syscall.EIO} {
		if errors.Is(err, e) {
			return store.WritesRefused(err)
		}
	}
	return err
}

// Tee writes each batch to every sink in turn; the batch is durable once
// all of them have it.
type Tee []Sink

// WriteBatch implements [Sink].
func (t Tee) WriteBatch(ctx context.Context, b *spyder.Batch) error {
	for _, s := range t {
		if err := s.WriteBatch(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// Counting counts in its metrics what its sink made durable.
type Counting struct {
	Sink
	M *metrics.Set
}

// WriteBatch implements [Sink].
func (c Counting) WriteBatch(ctx context.Context, b *spyder.Batch) error {
	if err := c.Sink.WriteBatch(ctx, b); err != nil {
		return err
	}
	c.M.ObserveBatch(b)
	return nil
}
