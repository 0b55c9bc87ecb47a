// Package layout holds tests of the tree's shape: rules a reviewer would
// otherwise have to check by hand after every change.
package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Limits on code that ships, test-support packages (crawltest, storetest,
// redistest) included: a file that outgrows them holds more than one idea,
// and a function that outgrows them does more than one thing.
const (
	maxFileLines = 400
	maxFuncLines = 80
)

// root is the module's root, two levels up from this package.
const root = "../.."

// TestLayout_Sizes fails for a non-test Go file over maxFileLines lines or
// a function (or function literal) over maxFuncLines, from its func line
// to its closing brace.
func TestLayout_Sizes(t *testing.T) {
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		checkFile(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d Go files under %s; want the whole tree", files, root)
	}
}

func checkFile(t *testing.T, path string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	rel, _ := filepath.Rel(root, path)
	if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
		t.Errorf("%s has %d lines; at most %d", rel, n, maxFileLines)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		var body *ast.BlockStmt
		name := "a function literal"
		switch fn := n.(type) {
		case *ast.FuncDecl:
			body, name = fn.Body, fn.Name.Name
		case *ast.FuncLit:
			body = fn.Body
		}
		if body != nil {
			start, end := fset.Position(n.Pos()).Line, fset.Position(body.End()).Line
			if lines := end - start + 1; lines > maxFuncLines {
				t.Errorf("%s:%d: %s has %d lines; at most %d", rel, start, name, lines, maxFuncLines)
			}
		}
		return true
	})
}

// TestLayout_StoresImportNoProbe: the stores implement the contracts of
// package store and nothing of the probe, so building one pulls in neither
// the crawler nor its DNS and HTML libraries.
func TestLayout_StoresImportNoProbe(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/spyder-crawler/spyder/store/boltstore", "github.com/spyder-crawler/spyder/store/redisstore").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps gave %d packages; want the stores' whole closure", len(deps))
	}
	for _, dep := range deps {
		for _, banned := range []string{"github.com/spyder-crawler/spyder/crawl", "github.com/spyder-crawler/spyder/sink", "github.com/spyder-crawler/spyder/worker", "github.com/spyder-crawler/spyder/resolver", "github.com/miekg/dns", "golang.org/x/net/html"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("the stores depend on %s", dep)
			}
		}
	}
}
