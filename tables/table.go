package tables

import (
	"bufio"
	"os"

	"github.com/parquet-go/parquet-go"
)

// closer is a table's file being written, whatever its row type.
type closer interface {
	close() error // finish, sync and close the file
	discard()     // close the file, keeping nothing
}

// table is one table's file of a part: rows wait in buf and go to the
// Parquet writer, which encodes a row group every RowGroupRows rows.
type table[T any] struct {
	f   *os.File
	bw  *bufio.Writer
	w   *parquet.GenericWriter[T]
	buf []T
	n   int64 // rows added
}

func newTable[T any](path string, opt Options) (*table[T], error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := parquet.NewGenericWriter[T](bw,
		parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup(opt.RowGroupRows),
		parquet.CreatedBy("spyder", "", ""),
	)
	return &table[T]{f: f, bw: bw, w: w}, nil
}

// flushRows is how many rows wait before they go to the Parquet writer:
// enough that a batch of one edge (the edges format) costs no call of its
// own, few enough to hold little.
const flushRows = 1024

func (t *table[T]) add(r T) error {
	t.buf = append(t.buf, r)
	t.n++
	if len(t.buf) >= flushRows {
		return t.flush()
	}
	return nil
}

// flush hands the waiting rows to the Parquet writer.
func (t *table[T]) flush() error {
	if len(t.buf) == 0 {
		return nil
	}
	_, err := t.w.Write(t.buf)
	clear(t.buf)
	t.buf = t.buf[:0]
	return err
}

func (t *table[T]) close() error {
	err := t.flush()
	if err == nil {
		err = t.w.Close()
	}
	if err == nil {
		err = t.bw.Flush()
	}
	if err == nil {
		err = t.f.Sync()
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (t *table[T]) discard() { t.f.Close() }
