package layout

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLayout_ArchitectureTable fails when the Layout table of
// docs/architecture.md and the tree differ: a directory holding Go files
// that the table leaves out, or a row naming a directory that holds none.
func TestLayout_ArchitectureTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "\n## Layout\n")
	if start < 0 {
		t.Fatal("docs/architecture.md has no ## Layout section")
	}
	section := text[start+1:]
	if next := strings.Index(section[1:], "\n## "); next >= 0 {
		section = section[:next+1]
	}
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(section, -1) {
		rows = append(rows, strings.TrimSuffix(m[1], "/"))
	}
	slices.Sort(rows)

	var dirs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			if rel != "." && !slices.Contains(dirs, filepath.ToSlash(rel)) {
				dirs = append(dirs, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(dirs)
	if diff := cmp.Diff(dirs, rows); diff != "" {
		t.Errorf("docs/architecture.md's Layout table and the package directories differ (-tree +docs):\n%s", diff)
	}
}
