package graph

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/tables"
)

// ExportParquet reads names and writes their batches as the Parquet
// tables `spyder run --format parquet` writes (see package tables) under
// dir, streaming: what it holds at once is a row group per table. Rows
// are written as the input holds them, as the run wrote them (each node
// and edge once per run), without deduplicating across runs, so that
// every row keeps its probe, run and batch. The part files are named
// export_<time>_<random>-<seq>.parquet, so an export adds parts beside
// those already in dir. It returns the part files written; on an error
// the part being written is removed.
func ExportParquet(r *Reader, names []string, dir string, opt tables.Options) ([]string, error) {
	var rnd [4]byte
	rand.Read(rnd[:])
	prefix := fmt.Sprintf("export_%s_%s", time.Now().UTC().Format("20060102T150405Z"), hex.EncodeToString(rnd[:]))
	w, err := tables.NewWriter(dir, prefix, opt)
	if err != nil {
		return nil, err
	}
	if err := r.Read(names, func(b *spyder.Batch) error { return w.Add(b) }); err != nil {
		w.Abort()
		return w.Written(), err
	}
	if err := w.Close(); err != nil {
		return w.Written(), err
	}
	return w.Written(), nil
}
