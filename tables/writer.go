package tables

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spyder-crawler/spyder"
)

// Defaults of [Options].
const (
	// DefaultPartRows ends a part once one of its tables holds this many
	// rows: parts of tens of MiB, which engines read in parallel.
	DefaultPartRows = 2_000_000
	// DefaultRowGroupRows bounds a row group, and so the rows a table's
	// writer buffers in memory before encoding them.
	DefaultRowGroupRows = 64 << 10
)

// Options tune a [Writer]; zero values take the defaults.
type Options struct {
	PartRows     int64
	RowGroupRows int64
}

// Writer writes batches as part files named <prefix>-<seq>.parquet, one in
// each table's folder per part. A part is only visible once complete: each
// file is written as .<name>.tmp, synced, then renamed, and the folder is
// synced. Writing the same prefix again replaces the same files, so
// converting the same input twice leaves no duplicate. A Writer is not
// safe for concurrent use.
type Writer struct {
	dir, prefix string
	opt         Options
	seq         int
	part        *part // nil between parts
	written     []string
}

// NewWriter returns a writer of parts under dir, creating dir and its
// table folders.
func NewWriter(dir, prefix string, opt Options) (*Writer, error) {
	if opt.PartRows <= 0 {
		opt.PartRows = DefaultPartRows
	}
	if opt.RowGroupRows <= 0 {
		opt.RowGroupRows = DefaultRowGroupRows
	}
	for _, t := range Names {
		if err := os.MkdirAll(filepath.Join(dir, t), 0o755); err != nil {
			return nil, fmt.Errorf("parquet output: %w", err)
		}
	}
	return &Writer{dir: dir, prefix: prefix, opt: opt}, nil
}

// Add writes b's rows to the current part, starting one if none is open,
// and ends the part once a table reaches PartRows rows.
func (w *Writer) Add(b *spyder.Batch) error {
	if w.part == nil {
		p, err := w.newPart()
		if err != nil {
			return err
		}
		w.part = p
	}
	if err := w.part.add(b); err != nil {
		return err
	}
	if w.part.rows() >= w.opt.PartRows {
		return w.endPart()
	}
	return nil
}

// Close ends the open part, if any: its files are complete and in place
// when Close returns nil. On an error the part's temporary files are
// removed.
func (w *Writer) Close() error {
	if w.part == nil {
		return nil
	}
	return w.endPart()
}

// Abort removes the open part's temporary files; the parts already ended
// stay.
func (w *Writer) Abort() {
	if w.part != nil {
		w.part.remove()
		w.part = nil
	}
}

// Written lists the part files put in place so far, in order.
func (w *Writer) Written() []string { return w.written }

func (w *Writer) newPart() (*part, error) {
	name := fmt.Sprintf("%s-%06d.parquet", w.prefix, w.seq)
	w.seq++
	return openPart(w.dir, name, w.opt)
}

func (w *Writer) endPart() error {
	p := w.part
	w.part = nil
	files, err := p.finish()
	if err != nil {
		p.remove()
		return err
	}
	w.written = append(w.written, files...)
	return nil
}

// part is one part being written: a file per table.
type part struct {
	dir, name string
	domains   *table[DomainRow]
	ips       *table[IPRow]
	certs     *table[CertRow]
	edges     *table[EdgeRow]
	probes    *table[ProbeRow]
}

func openPart(dir, name string, opt Options) (p *part, err error) {
	p = &part{dir: dir, name: name}
	tmp := func(t string) string { return filepath.Join(dir, t, "."+name+".tmp") }
	defer func() {
		if err != nil {
			p.remove()
			p, err = nil, fmt.Errorf("parquet output: %w", err)
		}
	}()
	if p.domains, err = newTable[DomainRow](tmp(Domains), opt); err != nil {
		return p, err
	}
	if p.ips, err = newTable[IPRow](tmp(IPs), opt); err != nil {
		return p, err
	}
	if p.certs, err = newTable[CertRow](tmp(Certs), opt); err != nil {
		return p, err
	}
	if p.edges, err = newTable[EdgeRow](tmp(Edges), opt); err != nil {
		return p, err
	}
	p.probes, err = newTable[ProbeRow](tmp(Probes), opt)
	return p, err
}

// tables lists the part's open tables by folder name.
func (p *part) tables() map[string]closer {
	m := map[string]closer{}
	add := func(name string, ok bool, t closer) {
		if ok {
			m[name] = t
		}
	}
	add(Domains, p.domains != nil, p.domains)
	add(IPs, p.ips != nil, p.ips)
	add(Certs, p.certs != nil, p.certs)
	add(Edges, p.edges != nil, p.edges)
	add(Probes, p.probes != nil, p.probes)
	return m
}

// add adds b's rows to the part's tables, stopping at the first row a
// table refuses. The rows keep no memory of b, which the caller may reuse.
func (p *part) add(b *spyder.Batch) error {
	o := origin{ProbeID: b.ProbeID, RunID: b.RunID, BatchID: b.BatchID}
	if err := p.addNodes(b, o); err != nil {
		return fmt.Errorf("parquet output: %w", err)
	}
	if err := p.addEdgesAndOutcomes(b, o); err != nil {
		return fmt.Errorf("parquet output: %w", err)
	}
	return nil
}

// addEdgesAndOutcomes adds b's edges and host outcomes, stopping at the
// first row a table refuses.
func (p *part) addEdgesAndOutcomes(b *spyder.Batch, o origin) error {
	for i := range b.Edges {
		if err := p.edges.add(edgeRow(&b.Edges[i], b.BatchID)); err != nil {
			return err
		}
	}
	for i := range b.Outcomes {
		if err := p.probes.add(probeRow(&b.Outcomes[i], b.Timestamp, o)); err != nil {
			return err
		}
	}
	return nil
}

// addNodes adds b's domain, IP and certificate nodes, stopping at the
// first row a table refuses.
func (p *part) addNodes(b *spyder.Batch, o origin) error {
	for i := range b.NodesDomain {
		if err := p.domains.add(domainRow(&b.NodesDomain[i], o)); err != nil {
			return err
		}
	}
	for i := range b.NodesIP {
		if err := p.ips.add(ipRow(&b.NodesIP[i], o)); err != nil {
			return err
		}
	}
	for i := range b.NodesCert {
		if err := p.certs.add(certRow(&b.NodesCert[i], o)); err != nil {
			return err
		}
	}
	return nil
}

// rows is the row count of the part's largest table.
func (p *part) rows() int64 {
	return max(p.domains.n, p.ips.n, p.certs.n, p.edges.n, p.probes.n)
}

// finish closes and syncs every table's file, then renames them into
// place and syncs the folders, and returns the final paths.
func (p *part) finish() ([]string, error) {
	tabs := p.tables()
	for _, t := range Names {
		if err := tabs[t].close(); err != nil {
			return nil, fmt.Errorf("parquet output %s/%s: %w", t, p.name, err)
		}
	}
	var files []string
	for _, t := range Names {
		tmp := filepath.Join(p.dir, t, "."+p.name+".tmp")
		final := filepath.Join(p.dir, t, p.name)
		if err := os.Rename(tmp, final); err != nil {
			return files, fmt.Errorf("parquet output: %w", err)
		}
		files = append(files, final)
	}
	for _, t := range Names {
		if err := SyncDir(filepath.Join(p.dir, t)); err != nil {
			return files, fmt.Errorf("parquet output: %w", err)
		}
	}
	return files, nil
}

// remove closes and deletes the part's temporary files.
func (p *part) remove() {
	for t, tab := range p.tables() {
		tab.discard()
		os.Remove(filepath.Join(p.dir, t, "."+p.name+".tmp"))
	}
}

// SyncDir fsyncs the directory dir, so that a file just created or renamed
// in it is still there after a crash (the rename of a synced part file is
// durable only once its directory is).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
