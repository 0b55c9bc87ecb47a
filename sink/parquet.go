package sink

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/internal/errtext"
	"github.com/spyder-crawler/spyder/tables"
)

// FormatParquet writes Parquet tables into the --out directory (see
// package tables), through a journal: [Parquet].
const FormatParquet = "parquet"

// JournalDir is the folder under the output directory holding the
// journals of batches not yet in part files.
const JournalDir = ".journal"

// Parquet defaults: a part per probe every ten minutes, or sooner after a
// million rows, so files stay few and large enough for engines to read
// fast while a crash leaves at most a journal's worth to convert again.
const (
	DefaultRollRows  = 1_000_000
	DefaultRollEvery = 10 * time.Minute
)

// ParquetConfig configures [OpenParquet].
type ParquetConfig struct {
	ProbeID, RunID string
	RollRows       int64         // rows (nodes, edges, outcomes) per part; 0: DefaultRollRows
	RollEvery      time.Duration // age of a journal that rolls it; 0: DefaultRollEvery
	Tables         tables.Options
	Now            func() time.Time
}

// Parquet is the sink of --format parquet. A batch is durable once it is
// appended to the probe's journal (a batch-format JSON lines file in
// <dir>/.journal, fsynced per batch), since a Parquet file cannot be
// appended to and one file per batch would be far too many. When the
// journal reaches RollRows rows or RollEvery age, and when the run ends, it
// is converted into one part per table and removed; the conversion runs in
// the background while a new journal takes the batches. A journal left by a
// killed run is converted when the next run opens the directory; its part
// names come from the journal's, so converting it again (a crash between
// renaming the parts and removing the journal) replaces the same files
// rather than adding duplicates. Journals are locked while written, so a
// probe never converts another live probe's journal in a shared directory.
type Parquet struct {
	mu      sync.Mutex
	dir     string
	cfg     ParquetConfig
	log     *slog.Logger
	j       *journal
	closed  bool
	buf     []byte
	written []string
	// converting, while a rolled journal is being converted in the
	// background, gives its part files and error.
	converting chan converted
	failed     error // the last background conversion's error
}

// converted is what a background conversion gives back.
type converted struct {
	files []string
	err   error
}

var _ Sink = (*Parquet)(nil)

// OpenParquet opens dir for Parquet output, first converting the journals
// that no running probe holds. Errors name the directory.
func OpenParquet(dir string, cfg ParquetConfig, log *slog.Logger) (*Parquet, error) {
	if cfg.RollRows <= 0 {
		cfg.RollRows = DefaultRollRows
	}
	if cfg.RollEvery <= 0 {
		cfg.RollEvery = DefaultRollEvery
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s is a file; --format parquet writes a directory of tables", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, JournalDir), 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, errtext.Path(err))
	}
	p := &Parquet{dir: dir, cfg: cfg, log: log}
	if err := p.recover(); err != nil {
		return nil, err
	}
	return p, nil
}

// WriteBatch implements [Sink]: b is in the journal, on disk, when it
// returns nil.
func (p *Parquet) WriteBatch(_ context.Context, b *spyder.Batch) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("parquet output closed")
	}
	if p.j == nil {
		j, err := p.newJournal()
		if err != nil {
			return err
		}
		p.j = j
	}
	buf, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("encode batch: %w", err)
	}
	p.buf = append(append(p.buf[:0], buf...), '\n')
	if err := p.j.append(p.buf); err != nil {
		return err
	}
	p.j.rows += int64(len(b.NodesDomain) + len(b.NodesIP) + len(b.NodesCert) + len(b.Edges) + len(b.Outcomes))
	if p.j.rows >= p.cfg.RollRows || p.cfg.Now().Sub(p.j.opened) >= p.cfg.RollEvery {
		return p.roll()
	}
	return nil
}

// Close converts the open journal into part files, and waits for the
// conversion running, if any. It returns the error of a conversion that
// failed in the run (its journal is left for the next run to convert).
func (p *Parquet) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	err := p.roll()
	p.wait()
	return errors.Join(err, p.failed)
}

// Written lists the part files this sink put in place, in order, once the
// conversion running, if any, is done.
func (p *Parquet) Written() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wait()
	return append([]string(nil), p.written...)
}

// roll converts the open journal, if any, in the background, once the
// conversion before it is done, so that batches go on being written
// meanwhile; append has already synced every batch in it. The journal
// stays locked until it is converted and removed, or its conversion
// failed (the next run converts it then).
func (p *Parquet) roll() error {
	j := p.j
	if j == nil {
		return nil
	}
	p.j = nil
	p.wait()
	done := make(chan converted, 1)
	p.converting = done
	go func() {
		files, err := p.convert(j.f, j.path)
		j.f.Close()
		done <- converted{files, err}
	}()
	return nil
}

// wait waits for the conversion running, if any, and takes its result.
func (p *Parquet) wait() {
	if p.converting == nil {
		return
	}
	c := <-p.converting
	p.converting = nil
	p.written = append(p.written, c.files...)
	if c.err != nil {
		p.failed = c.err
		p.log.Warn("parquet_convert_failed", "err", c.err,
			"note", "the journal's batches stay on disk; the next run on the directory converts them")
	}
}

// recover converts every journal in the directory that no probe holds.
// A journal is converted from the handle this probe locked, and only if
// that handle is still the file of its name: one another probe converted
// and removed between the glob and the lock counts as done.
func (p *Parquet) recover() error {
	paths, err := filepath.Glob(filepath.Join(p.dir, JournalDir, "*.jsonl"))
	if err != nil {
		return err
	}
	for _, path := range paths {
		if err := p.recoverOne(path); err != nil {
			return err
		}
	}
	return nil
}

// recoverOne converts the journal at path unless a live probe holds it or
// it is gone.
func (p *Parquet) recoverOne(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // another probe converted and removed it meanwhile
	}
	defer f.Close()
	if journalOpened != nil {
		journalOpened()
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return nil // a live probe's
	}
	if !stillNamed(f, path) {
		return nil // converted and removed by another probe before our lock
	}
	p.log.Info("parquet_journal", "file", path, "note", "converting the journal an earlier run left into part files")
	files, err := p.convert(f, path)
	p.written = append(p.written, files...)
	return err
}

// journalOpened, when set (by tests), runs after recoverOne has opened a
// journal and before it locks it.
var journalOpened func()

// stillNamed reports whether f is the file path names now.
func stillNamed(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	named, err := os.Stat(path)
	return err == nil && os.SameFile(held, named)
}

// convert writes the batches of the journal f, locked by this probe and
// named path, as part files named after it, then removes it. It reads f
// from its start whatever f's offset. A last line cut short (a run killed
// inside a write, whose batch was never acknowledged) is left out.
func (p *Parquet) convert(f *os.File, path string) ([]string, error) {
	prefix := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	w, err := tables.NewWriter(p.dir, prefix, p.cfg.Tables)
	if err != nil {
		return nil, err
	}
	if err := p.readJournal(io.NewSectionReader(f, 0, math.MaxInt64), path, w.Add); err != nil {
		w.Abort()
		return w.Written(), err
	}
	if err := w.Close(); err != nil {
		return w.Written(), fmt.Errorf("%s: %w", p.dir, diskRefuses(err))
	}
	if err := os.Remove(path); err != nil {
		return w.Written(), fmt.Errorf("%s: %w", path, errtext.Path(err))
	}
	return w.Written(), tables.SyncDir(filepath.Join(p.dir, JournalDir))
}

// readJournal calls add with each batch of the journal r.
func (p *Parquet) readJournal(r io.Reader, path string, add func(*spyder.Batch) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			if len(line) > 0 {
				p.log.Warn("parquet_journal_partial", "file", path, "line", n,
					"note", "the journal ended inside a batch (a run was killed while writing it); that batch was never acknowledged and its hosts are probed again")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		var b spyder.Batch
		if err := json.Unmarshal(line, &b); err != nil {
			return fmt.Errorf("%s: line %d: %w", path, n, err)
		}
		if err := add(&b); err != nil {
			return err
		}
	}
}

// journal is the open journal of this sink.
type journal struct {
	path   string
	f      *os.File
	size   int64
	rows   int64
	opened time.Time
}

// journalCreated, when set (by tests), runs after newJournal has created
// and locked a journal and before the journal takes its .jsonl name.
var journalCreated func()

// newJournal creates and locks a journal whose name no other probe's can
// take: the probe and run IDs, the time and a random suffix. It is created
// and locked as .<name>.tmp, which recover's glob does not match, and only
// then renamed to <name>.jsonl: no probe ever sees a journal unlocked
// while its writer holds it.
func (p *Parquet) newJournal() (*journal, error) {
	now := p.cfg.Now()
	var r [4]byte
	rand.Read(r[:])
	name := fmt.Sprintf("%s_%s_%s_%s.jsonl", fileSafe(p.cfg.ProbeID), fileSafe(p.cfg.RunID),
		now.UTC().Format("20060102T150405.000000000Z"), hex.EncodeToString(r[:]))
	path := filepath.Join(p.dir, JournalDir, name)
	tmp := filepath.Join(p.dir, JournalDir, "."+name+".tmp")
	f, err := createLocked(tmp)
	if err != nil {
		return nil, err
	}
	if journalCreated != nil {
		journalCreated()
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("%s: %w", path, errtext.Path(err))
	}
	if err := tables.SyncDir(filepath.Dir(path)); err != nil { // the name the batches are found by after a crash
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, diskRefuses(err))
	}
	return &journal{path: path, f: f, opened: now}, nil
}

// createLocked creates the file path, which must not exist, and locks it.
func createLocked(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, errtext.Path(err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("%s: lock: %w", path, err)
	}
	return f, nil
}

// append writes line and syncs it; a write that fails part way is cut
// back, so the journal holds whole batches only.
func (j *journal) append(line []byte) error {
	n, err := j.f.Write(line)
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		if n > 0 {
			j.f.Truncate(j.size)
			j.f.Seek(j.size, io.SeekStart)
		}
		return fmt.Errorf("%s: %w", j.path, diskRefuses(err))
	}
	j.size += int64(n)
	return nil
}

// fileSafe keeps letters, digits, '.', '-' and '+' of s and replaces the
// rest with '-', so an ID is safe in a file name.
func fileSafe(s string) string {
	if s == "" {
		return "none"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '+':
			return r
		}
		return '-'
	}, s)
}
