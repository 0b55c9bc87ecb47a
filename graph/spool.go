package graph

import (
	"fmt"
	"io"
	"os"
)

// Spool copies r.Stdin to a temporary file when names holds "-", for the
// commands that read their input more than once, and returns the names
// with "-" replaced and a function that removes the file. Problems in it
// are still reported as stdin's.
func (r *Reader) Spool(names []string) ([]string, func(), error) {
	stdin := r.Stdin
	if stdin == nil {
		stdin = os.Stdin
	}
	out := append([]string(nil), names...)
	var tmp *os.File
	for i, n := range out {
		if n != "-" {
			continue
		}
		if tmp == nil {
			f, err := os.CreateTemp("", "spyder-graph-stdin-*")
			if err != nil {
				return nil, nil, fmt.Errorf("spool stdin: %w", err)
			}
			tmp = f
			if _, err := io.Copy(f, stdin); err != nil {
				f.Close()
				os.Remove(f.Name())
				return nil, nil, fmt.Errorf("spool stdin: %w", err)
			}
			f.Close()
			if r.display == nil {
				r.display = map[string]string{}
			}
			r.display[f.Name()] = "stdin"
		}
		out[i] = tmp.Name()
	}
	cleanup := func() {}
	if tmp != nil {
		cleanup = func() { os.Remove(tmp.Name()) }
	}
	return out, cleanup, nil
}
