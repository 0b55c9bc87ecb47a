package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spyder-crawler/spyder/internal/errtext"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/sink"
)

// preflight checks, before anything is opened or seeded, that the
// --domains file can be read and looks like text, and that the files a run
// will write can be written: the --out file (with --format parquet, the
// directory of tables) and, standalone, the --db file. A --redis that does not answer is caught next, by opening the
// backend, still before seeding.
func preflight(c *cli.Context, cfg runConfig) error {
	if err := queue.CheckFile(cfg.domains); err != nil {
		return err
	}
	switch {
	case cfg.format == sink.FormatParquet:
		if err := checkTablesDir(cfg.out); err != nil {
			return err
		}
	case cfg.out != "" && cfg.out != "-":
		if err := checkWritable("--out", cfg.out); err != nil {
			return err
		}
	}
	if strings.TrimSpace(c.String("redis")) == "" && c.String("db") != "" {
		return checkWritable("--db", c.String("db"))
	}
	return nil
}

// checkWritable reports, as one line naming flag and path, why path could
// not be opened for writing: its directory is missing or is not one, it
// is a directory itself, or it cannot be created or opened there. It
// leaves nothing behind.
func checkWritable(flag, path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s %s: directory %s does not exist", flag, path, dir)
	case err != nil:
		return fmt.Errorf("%s %s: %w", flag, path, errtext.Path(err))
	case !st.IsDir():
		return fmt.Errorf("%s %s: %s is not a directory", flag, path, dir)
	}
	st, err = os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return fmt.Errorf("%s %s is a directory, not a file", flag, path)
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("%s %s cannot be written: %w", flag, path, errtext.Path(err))
		}
		return f.Close()
	}
	f, err := os.CreateTemp(dir, ".spyder-check-*")
	if err != nil {
		return fmt.Errorf("%s %s: directory %s is not writable: %w", flag, path, dir, errtext.Path(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// checkTablesDir reports, as one line, why dir cannot hold the Parquet
// tables: it is a file, or it (or, while it does not exist, the directory
// it would be made in) cannot be written. A directory that exists is
// fine: a resumed run, and every probe of a fleet, add part files to it.
func checkTablesDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return checkWritable("--out", dir)
	case err != nil:
		return fmt.Errorf("--out %s: %w", dir, errtext.Path(err))
	case !st.IsDir():
		return fmt.Errorf("--out %s is a file; --format parquet writes a directory of tables", dir)
	}
	f, err := os.CreateTemp(dir, ".spyder-check-*")
	if err != nil {
		return fmt.Errorf("--out %s: directory is not writable: %w", dir, errtext.Path(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// newFiles are the files a command is about to create. A command that
// fails before it stored anything in them (a run that fails to start, a
// seed or an import that stored nothing) removes them again, so it leaves
// no new .db (nor an empty --out) behind.
type newFiles []string

// missingFiles returns those of paths that do not exist yet.
func missingFiles(paths ...string) newFiles {
	var out newFiles
	for _, p := range paths {
		if p == "" || p == "-" {
			continue
		}
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			out = append(out, p)
		}
	}
	return out
}

// remove deletes the files. Only a command that stored nothing in them
// calls it: no batch was written to --out yet, and no host probed from or
// imported into the new .db.
func (fs newFiles) remove() {
	for _, p := range fs {
		os.Remove(p)
	}
}
