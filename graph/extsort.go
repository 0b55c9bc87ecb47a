package graph

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
)

// SortMemory is how many bytes of records a sorter holds before it writes
// them, sorted, to a run file in the temporary directory. The graph tools'
// memory is a small multiple of it whatever the input's size; their disk
// use is about the input's size. A variable so that tests can lower it.
var SortMemory = 64 << 20

// runFiles counts the run files written, for the tests to see a spill.
var runFiles atomic.Int64

// maxFanIn is how many run files one merge reads at once; more are first
// merged in groups, so the open files and their buffers stay bounded.
const maxFanIn = 64

// sorter is an external sort of byte records: it keeps records in an
// arena of half SortMemory, and when that is full sorts it and writes it
// to a run file in the background while the other half fills; it gives
// every record back in byte order, merging the runs. Records that are
// equal come back one after another, which is what lets the tools count
// and deduplicate without a set the size of the graph.
type sorter struct {
	arena []byte
	recs  []span
	runs  []string
	limit int
	// spare is the other half, back from the last spill; pending, when a
	// spill is running, gives its run file and its half back.
	spare   half
	pending chan spilled
}

// span is a record's place in the arena.
type span struct{ off, n uint32 }

// half is an arena and its records.
type half struct {
	arena []byte
	recs  []span
}

// spilled is what a background spill gives back.
type spilled struct {
	half
	run string
	err error
}

func newSorter() *sorter { return &sorter{limit: SortMemory / 2} }

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

func (h *half) rec(i int) []byte {
	sp := h.recs[i]
	return h.arena[sp.off : sp.off+sp.n]
}

func (h *half) sort() {
	slices.SortFunc(h.recs, func(a, b span) int {
		return bytes.Compare(h.arena[a.off:a.off+a.n], h.arena[b.off:b.off+b.n])
	})
}

// spill hands the records held to a background goroutine that sorts them
// and writes them to a new run file, once the previous spill is done, and
// goes on with the other half.
func (s *sorter) spill() error {
	if err := s.wait(); err != nil {
		return err
	}
	full := half{s.arena, s.recs}
	s.arena, s.recs = s.spare.arena[:0], s.spare.recs[:0]
	s.spare = half{}
	done := make(chan spilled, 1)
	s.pending = done
	go func() {
		run, err := writeRun(&full)
		done <- spilled{half: full, run: run, err: err}
	}()
	return nil
}

// wait waits for the spill running, if any, and takes its run file.
func (s *sorter) wait() error {
	if s.pending == nil {
		return nil
	}
	r := <-s.pending
	s.pending = nil
	if r.run != "" {
		s.runs = append(s.runs, r.run)
	}
	s.spare = r.half
	return r.err
}

// writeRun sorts h and writes it to a new run file.
func writeRun(h *half) (string, error) {
	h.sort()
	f, err := os.CreateTemp("", "spyder-graph-run-*")
	if err != nil {
		return "", fmt.Errorf("graph: temporary run file: %w", err)
	}
	runFiles.Add(1)
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range h.recs {
		writeRec(w, h.rec(i))
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("graph: temporary run file: %w", err)
	}
	return f.Name(), nil
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
	if err := s.wait(); err != nil {
		return err
	}
	if len(s.runs) == 0 {
		h := half{s.arena, s.recs}
		h.sort()
		for i := range h.recs {
			if err := fn(h.rec(i)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.recs) > 0 {
		run, err := writeRun(&half{s.arena, s.recs})
		if err != nil {
			return err
		}
		s.runs = append(s.runs, run)
	}
	s.arena, s.recs, s.spare = nil, nil, half{}
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
	runFiles.Add(1)
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

// close waits for a spill running and removes the run files.
func (s *sorter) close() {
	s.wait()
	for _, r := range s.runs {
		os.Remove(r)
	}
	s.runs, s.arena, s.recs, s.spare = nil, nil, nil, half{}
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
			return fmt.Errorf("graph: run file: %w", err)
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
