package graph

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spyder-crawler/spyder"
)

// Change is one line of a diff: a node or an edge that is in the new graph
// and not the old ("added"), or the other way round ("removed"). Nodes are
// compared by type and ID, edges by type, source and target; attributes
// (first_seen, last_seen, a certificate's fields) are not compared.
type Change struct {
	Change     string `json:"change"` // "added" or "removed"
	Kind       string `json:"kind"`   // "node" or "edge"
	Type       string `json:"type"`   // node type (domain, ip, cert) or edge type
	ID         string `json:"id,omitempty"`
	Source     string `json:"source,omitempty"`
	Target     string `json:"target,omitempty"`
	ObservedAt int64  `json:"observed_at,omitempty"`
	RunID      string `json:"run_id,omitempty"`
}

// Side is one side of a diff: files, and optionally the one run to take
// from them ("" takes every run).
type Side struct {
	Names []string
	Run   string
}

// DiffCounts counts the changes written.
type DiffCounts struct{ Added, Removed int }

// Diff writes the changes from old to new as JSON lines: every addition,
// then every removal, each sorted by kind (nodes first), type and ID or
// source and target. Each side is walked once into a temporary file of its
// keys, in order (see walker), and the two files are merged, so memory does
// not grow with the graph. A side's run that its files do not hold is an
// error, returned before any change is written.
func Diff(r *Reader, old, new Side, out io.Writer) (DiffCounts, error) {
	var n DiffCounts
	oldKeys, err := sideKeys(r, old)
	if err != nil {
		return n, err
	}
	defer os.Remove(oldKeys)
	newKeys, err := sideKeys(r, new)
	if err != nil {
		return n, err
	}
	defer os.Remove(newKeys)
	removed, err := os.CreateTemp("", "spyder-graph-removed-*")
	if err != nil {
		return n, fmt.Errorf("graph diff: %w", err)
	}
	defer os.Remove(removed.Name())
	defer removed.Close()
	bw, rw := bufio.NewWriterSize(out, 256<<10), bufio.NewWriterSize(removed, 256<<10)
	enc, renc := json.NewEncoder(bw), json.NewEncoder(rw)
	err = mergeKeys(oldKeys, newKeys, func(rec []byte, inOld, inNew bool) error {
		switch {
		case inNew && !inOld:
			n.Added++
			return enc.Encode(changeOf("added", rec))
		case inOld && !inNew:
			n.Removed++
			return renc.Encode(changeOf("removed", rec))
		}
		return nil
	})
	if err == nil {
		err = rw.Flush()
	}
	if err == nil {
		_, err = removed.Seek(0, io.SeekStart)
	}
	if err == nil {
		_, err = io.Copy(bw, removed)
	}
	if err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// walkSide walks the side's files, keeping only its run. A run that none
// of the files holds is an error naming the runs they do hold: most
// likely a typo, which would otherwise make the whole other side a change.
func walkSide(r *Reader, s Side, v visitor) error {
	w := newWalker(v)
	defer w.s.close() // its run files, when reading fails
	fn := w.batch
	runs := map[string]bool{} // every run the files hold, when s keeps one
	if s.Run != "" {
		fn = func(b *spyder.Batch) error {
			runs[b.RunID] = true
			for _, e := range b.Edges {
				if e.RunID != "" && e.RunID != b.RunID { // most edges carry their batch's run
					runs[e.RunID] = true
				}
			}
			return w.batch(onlyRun(b, s.Run))
		}
	}
	if err := r.Read(s.Names, fn); err != nil {
		return err
	}
	if s.Run != "" && !runs[s.Run] {
		delete(runs, "")
		held := "none"
		if len(runs) > 0 {
			held = strings.Join(slices.Sorted(maps.Keys(runs)), ", ")
		}
		return fmt.Errorf("run %q is in none of the files (runs there: %s)", s.Run, held)
	}
	return w.finish()
}

// onlyRun returns the part of b written by run: its nodes if the batch is
// the run's, and the run's edges.
func onlyRun(b *spyder.Batch, run string) *spyder.Batch {
	out := &spyder.Batch{RunID: run}
	if b.RunID == run {
		out.NodesDomain, out.NodesIP, out.NodesCert, out.Outcomes = b.NodesDomain, b.NodesIP, b.NodesCert, b.Outcomes
	}
	for _, e := range b.Edges {
		if e.RunID == run || (e.RunID == "" && b.RunID == run) {
			out.Edges = append(out.Edges, e)
		}
	}
	return out
}

// keyFile is the visitor that writes a side's nodes and edges, in the
// walk's order (their keys' order), to a temporary file: each node's key,
// each edge's key with its observed_at and run_id.
type keyFile struct {
	noOutcomes
	w   *bufio.Writer
	buf []byte
}

func (k *keyFile) node(n Node) error {
	if b, ok := key(k.buf[:0], recNode, n.Type, n.ID); ok {
		k.buf = b
		writeRec(k.w, b)
	}
	return nil
}

func (k *keyFile) edge(e *spyder.Edge) error {
	if b, ok := key(k.buf[:0], recEdge, e.Type, e.Source, e.Target); ok {
		k.buf = appendStr(binary.AppendVarint(b, e.ObservedAt), e.RunID)
		writeRec(k.w, k.buf)
	}
	return nil
}

// sideKeys walks the side into a key file and returns its name.
func sideKeys(r *Reader, s Side) (string, error) {
	f, err := os.CreateTemp("", "spyder-graph-keys-*")
	if err != nil {
		return "", fmt.Errorf("graph diff: %w", err)
	}
	k := &keyFile{w: bufio.NewWriterSize(f, 1<<20)}
	err = walkSide(r, s, k)
	if err == nil {
		err = k.w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// mergeKeys calls fn with each key of the two sorted key files once, in
// order, saying which files hold it; rec is the old file's record when it
// is there (the new one's otherwise).
func mergeKeys(oldName, newName string, fn func(rec []byte, inOld, inNew bool) error) error {
	var cs [2]*cursor
	for i, name := range []string{oldName, newName} {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("graph diff: %w", err)
		}
		defer f.Close()
		cs[i] = &cursor{f: f, r: bufio.NewReaderSize(f, 256<<10)}
	}
	var more [2]bool
	for i, c := range cs {
		ok, err := c.next()
		if err != nil {
			return fmt.Errorf("graph diff: %w", err)
		}
		more[i] = ok
	}
	for more[0] || more[1] {
		c := 0
		if more[0] && more[1] {
			c = bytes.Compare(recordKey(cs[0].rec), recordKey(cs[1].rec))
		} else if more[1] {
			c = 1
		} else {
			c = -1
		}
		inOld, inNew := c <= 0, c >= 0
		rec := cs[0].rec
		if !inOld {
			rec = cs[1].rec
		}
		if err := fn(rec, inOld, inNew); err != nil {
			return err
		}
		for i, in := range []bool{inOld, inNew} {
			if !in {
				continue
			}
			ok, err := cs[i].next()
			if err != nil {
				return fmt.Errorf("graph diff: %w", err)
			}
			more[i] = ok
		}
	}
	return nil
}

// changeOf turns a key file's record into a change.
func changeOf(change string, rec []byte) Change {
	k := recordKey(rec)
	parts := strings.Split(string(k[1:len(k)-1]), "\x01")
	if k[0] == recNode {
		return Change{Change: change, Kind: "node", Type: parts[0], ID: parts[1]}
	}
	f := &fields{b: rec[len(k):]}
	return Change{Change: change, Kind: "edge", Type: parts[0], Source: parts[1], Target: parts[2],
		ObservedAt: f.int(), RunID: f.str()}
}
