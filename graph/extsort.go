package graph

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// SortMemory is how many bytes of records a sorter holds before it writes
// them, sorted, to a run file in the temporary directory. The graph tools'
// memory is a small multiple of it whatever the input's size; their disk
// use is about the input's size. A variable so that tests can lower it.
var SortMemory = 96 << 20

// maxFanIn is how many run files one merge reads at once; more are first
// merged in groups, so the open files and their buffers stay bounded.
const maxFanIn = 64

// sorter is an external sort of byte records: it keeps up to SortMemory
// bytes in one arena, sorts and spills them to a run file when full, and
// gives every record back in byte order, merging the runs. Records that
// are equal come back one after another, which is what lets the tools
// count and deduplicate without a set the size of the graph.
type sorter struct {
	arena []byte
	recs  []span
	runs  []string
	limit int
}

// span is a record's place in the arena.
type span struct{ off, n uint32 }

func newSorter() *sorter { return &sorter{limit: SortMemory} }

// add copies rec into the sorter.
func (s *sorter) add(rec []byte) error {
	if len(s.arena)+len(rec) > s.limit && len(s.recs) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	if need := len(s.arena) + len(rec); need > cap(s.arena) {
		// Grown by append, the arena would double past the limit.
		grown := make([]byte, len(s.arena), max(min(2*cap(s.arena), s.limit), need, 64<<10))
		copy(grown, s.arena)
		s.arena = grown
	}
	s.recs = append(s.recs, span{uint32(len(s.arena)), uint32(len(rec))})
	s.arena = append(s.arena, rec...)
	return nil
}

func (s *sorter) rec(i int) []byte {
	sp := s.recs[i]
	return s.arena[sp.off : sp.off+sp.n]
}

func (s *sorter) sortMem() {
	slices.SortFunc(s.recs, func(a, b span) int {
		return bytes.Compare(s.arena[a.off:a.off+a.n], s.arena[b.off:b.off+b.n])
	})
}

// spill writes the records held, sorted, to a new run file.
func (s *sorter) spill() error {
	s.sortMem()
	f, err := os.CreateTemp("", "spyder-graph-run-*")
	if err != nil {
		return fmt.Errorf("graph: temporary run file: %w", err)
	}
	s.runs = append(s.runs, f.Name())
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range s.recs {
		writeRec(w, s.rec(i))
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	s.arena, s.recs = s.arena[:0], s.recs[:0]
	if err != nil {
		return fmt.Errorf("graph: temporary run file: %w", err)
	}
	return nil
}

func writeRec(w *bufio.Writer, rec []byte) {
	var n [binary.MaxVarintLen64]byte
	w.Write(n[:binary.PutUvarint(n[:], uint64(len(rec)))])
	w.Write(rec)
}

// each calls fn with every record in byte order; rec is valid only during
// the call. The sorter is empty afterwards, its run files removed.
func (s *sorter) each(fn func(rec []byte) error) error {
	defer s.close()
	if len(s.runs) == 0 {
		s.sortMem()
		for i := range s.recs {
			if err := fn(s.rec(i)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.recs) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.arena, s.recs = nil, nil
	for len(s.runs) > maxFanIn {
		if err := s.mergeGroup(); err != nil {
			return err
		}
	}
	return merge(s.runs, fn)
}

// mergeGroup merges the first maxFanIn runs into one new run.
func (s *sorter) mergeGroup() error {
	group := s.runs[:maxFanIn]
	f, err := os.CreateTemp("", "spyder-graph-run-*")
	if err != nil {
		return fmt.Errorf("graph: temporary run file: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = merge(group, func(rec []byte) error { writeRec(w, rec); return nil })
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	for _, r := range group {
		os.Remove(r)
	}
	s.runs = append(s.runs[maxFanIn:], f.Name())
	return err
}

// close removes the run files.
func (s *sorter) close() {
	for _, r := range s.runs {
		os.Remove(r)
	}
	s.runs, s.arena, s.recs = nil, nil, nil
}

// cursor reads one run file.
type cursor struct {
	f   *os.File
	r   *bufio.Reader
	rec []byte
}

func (c *cursor) next() (bool, error) {
	n, err := binary.ReadUvarint(c.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c.rec = slices.Grow(c.rec[:0], int(n))[:n]
	_, err = io.ReadFull(c.r, c.rec)
	return err == nil, err
}

// cursors is a min-heap of cursors by their current record.
type cursors []*cursor

func (h cursors) Len() int           { return len(h) }
func (h cursors) Less(i, j int) bool { return bytes.Compare(h[i].rec, h[j].rec) < 0 }
func (h cursors) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursors) Push(x any)        { *h = append(*h, x.(*cursor)) }
func (h *cursors) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// merge calls fn with the records of the sorted run files in order.
func merge(runs []string, fn func([]byte) error) (err error) {
	var h cursors
	defer func() {
		for _, c := range h {
			c.f.Close()
		}
	}()
	for _, name := range runs {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("graph: run file: %w", err)
		}
		c := &cursor{f: f, r: bufio.NewReaderSize(f, 64<<10)}
		ok, err := c.next()
		if err != nil {
			f.Close()
			return fmt.Errorf("graph: run file: %w", err)
		}
		if !ok {
			f.Close()
			continue
		}
		h = append(h, c)
	}
	heap.Init(&h)
	for len(h) > 0 {
		c := h[0]
		if err := fn(c.rec); err != nil {
			return err
		}
		ok, err := c.next()
		if err != nil {
			return errors.Join(fmt.Errorf("graph: run file: %w", err))
		}
		if ok {
			heap.Fix(&h, 0)
			continue
		}
		c.f.Close()
		heap.Pop(&h)
	}
	return nil
}
