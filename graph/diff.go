package graph

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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

// Diff writes the changes from old to new as JSON lines: every addition
// (in the order of new), then every removal (in the order of old). It
// keeps only 8-byte hashes of each side's nodes and edges, and so reads
// old twice: old's files must be files, not stdin (see Spool). A side's
// run that its files do not hold is an error, returned before any change
// is written.
func Diff(r *Reader, old, new Side, out io.Writer) (DiffCounts, error) {
	var n DiffCounts
	oldKeys, newKeys := hashSet{}, hashSet{}
	if err := walkSide(r, old, &differ{keys: oldKeys}); err != nil {
		return n, err
	}
	bw := bufio.NewWriterSize(out, 256<<10)
	enc := json.NewEncoder(bw)
	emit := func(c Change) error { return enc.Encode(c) }
	added := &differ{keys: newKeys, other: oldKeys, change: "added", emit: emit, count: &n.Added}
	// A run the new side's files lack has added nothing, so the check
	// comes before anything is written as removed.
	if err := walkSide(r, new, added); err != nil {
		return n, err
	}
	removed := &differ{keys: hashSet{}, other: newKeys, change: "removed", emit: emit, count: &n.Removed}
	if err := walkSide(r, old, removed); err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// walkSide walks the side's files, keeping only its run. A run that none
// of the files holds is an error naming the runs they do hold: most
// likely a typo, which would otherwise make the whole other side a change.
func walkSide(r *Reader, s Side, v visitor) error {
	w := newWalker(v)
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

// differ records the keys of one side and, with emit set, writes the
// nodes and edges missing from other.
type differ struct {
	noProbes
	keys, other hashSet
	change      string
	emit        func(Change) error
	count       *int
}

func (d *differ) node(n Node) error {
	h := keyHash("n", n.Type, n.ID)
	d.keys.add(h)
	if _, ok := d.other[h]; ok || d.emit == nil {
		return nil
	}
	*d.count++
	return d.emit(Change{Change: d.change, Kind: "node", Type: n.Type, ID: n.ID})
}

func (d *differ) edge(e *spyder.Edge) error {
	h := keyHash("e", e.Type, e.Source, e.Target)
	d.keys.add(h)
	if _, ok := d.other[h]; ok || d.emit == nil {
		return nil
	}
	*d.count++
	return d.emit(Change{Change: d.change, Kind: "edge", Type: e.Type, Source: e.Source, Target: e.Target,
		ObservedAt: e.ObservedAt, RunID: e.RunID})
}
