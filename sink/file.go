package sink

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spyder-crawler/spyder/internal/errtext"
)

// OpenFile opens path for appending (a resumed run adds to it) and returns
// a sink in format that fsyncs every batch, and the function that syncs and
// closes the file. Errors name the file.
func OpenFile(path, format string, log *slog.Logger) (Sink, func() error, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, nil, fmt.Errorf("%s is a directory", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, errtext.Path(err))
	}
	if endsMidLine(path) {
		// A run killed inside a write (SIGKILL can cut one short) left part
		// of a batch it never acknowledged. End that line, so the next batch
		// starts a line of its own instead of being glued to it and lost to
		// every reader; the cut one's hosts are probed again anyway.
		if _, err := f.Write([]byte("\n")); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		log.Warn("out_partial_line", "file", path,
			"note", "the file ended inside a batch line (a run was killed while writing it): that line is left as it was, not valid JSON; its hosts are probed again")
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	s, err := NewJSONSink(&wholeLines{File: f, size: st.Size()}, format)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return s, func() error {
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
		return f.Close()
	}, nil
}

// endsMidLine reports whether path is a regular file that is not empty and
// does not end with a newline.
func endsMidLine(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [1]byte
	_, err = f.ReadAt(b[:], st.Size()-1)
	return err == nil && b[0] != '\n'
}

// wholeLines is an --out file that a failed write (a full disk takes part
// of a batch, then fails) cuts back to its last whole batch, so the file
// stays JSON lines and a resumed run appends after the last complete one.
type wholeLines struct {
	*os.File
	size int64
}

func (w *wholeLines) Write(p []byte) (int, error) {
	n, err := w.File.Write(p)
	if err != nil {
		if n > 0 {
			if terr := w.File.Truncate(w.size); terr != nil {
				return n, fmt.Errorf("%w (and cutting off the partial batch: %v)", err, terr)
			}
		}
		return 0, err
	}
	w.size += int64(n)
	return n, nil
}
