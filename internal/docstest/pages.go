// Package docstest reads the user documentation, README.md and the pages
// under docs/, for the tests that hold it to the code.
package docstest

import (
	"os"
	"path/filepath"
	"testing"
)

// Pages returns the text of README.md and of every page under docs/ of the
// repository at root, keyed by slash path from root. It fails tb when a
// page cannot be read or docs/ has none.
func Pages(tb testing.TB, root string) map[string]string {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(paths) == 0 {
		tb.Fatalf("no pages under %s", filepath.Join(root, "docs"))
	}
	pages := map[string]string{}
	for _, p := range append(paths, filepath.Join(root, "README.md")) {
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			tb.Fatal(err)
		}
		pages[filepath.ToSlash(rel)] = string(data)
	}
	return pages
}
