package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the import path of the module's root package.
const module = "github.com/spyder-crawler/spyder"

// deps returns the packages pkgs depend on, themselves included.
func deps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %v: %v\n%s", pkgs, err, out)
	}
	list := strings.Fields(string(out))
	if len(list) < 5 {
		t.Fatalf("go list -deps %v gave %d packages; want their whole closure", pkgs, len(list))
	}
	return list
}

// imports returns the packages pkg imports itself, not its tests.
func imports(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

// reaches reports the packages of deps that are banned or under one.
func reaches(deps []string, banned ...string) []string {
	var out []string
	for _, d := range deps {
		for _, b := range banned {
			if d == b || strings.HasPrefix(d, b+"/") {
				out = append(out, d)
			}
		}
	}
	return out
}

// TestLayout_VocabularyIsALeaf: the output's types, which every part of
// spyder speaks, import nothing of spyder's but package host, so that a
// tool reading the output needs neither the crawler nor the stores.
func TestLayout_VocabularyIsALeaf(t *testing.T) {
	imps := imports(t, module)
	if !slices.Contains(imps, module+"/host") {
		t.Errorf("package spyder's imports %v lack host; the list was not read right", imps)
	}
	for _, imp := range imps {
		if strings.HasPrefix(imp, module+"/") && imp != module+"/host" {
			t.Errorf("package spyder imports %s; want nothing of ours but host", imp)
		}
	}
}

// TestLayout_OutputReachesNoProber: the sinks and the graph tools read
// and write the output through package spyder's types, so building them
// pulls in neither the crawler nor its DNS client and libraries.
func TestLayout_OutputReachesNoProber(t *testing.T) {
	got := reaches(deps(t, "./../../graph/...", "./../../sink/..."),
		module+"/crawl", module+"/resolver", module+"/worker", "github.com/miekg/dns", "golang.org/x/net/html")
	for _, d := range got {
		t.Errorf("graph or sink depends on %s", d)
	}
}

// TestLayout_DNSLivesInResolver: only the DNS client (and the simulated
// internet of the tests, which serves DNS) speaks the DNS wire format.
func TestLayout_DNSLivesInResolver(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := []string{module + "/resolver", module + "/crawl/crawltest"}
	resolverSeen := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imps, _ := strings.Cut(line, " ")
		if !slices.Contains(strings.Fields(imps), "github.com/miekg/dns") {
			continue
		}
		resolverSeen = resolverSeen || pkg == module+"/resolver"
		if !slices.Contains(allowed, pkg) {
			t.Errorf("%s imports github.com/miekg/dns; only %v may", pkg, allowed)
		}
	}
	if !resolverSeen {
		t.Error("package resolver was not seen importing github.com/miekg/dns; the import lists were not read right")
	}
}

// TestLayout_OnlyMainTunesTheRuntime: the collector's pacing is the whole
// process's, so only a program's main starts it, never a library.
func TestLayout_OnlyMainTunesTheRuntime(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{.Name}} {{join .Imports " "}}`, "./../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	mainSeen := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !slices.Contains(f[2:], module+"/internal/gcpace") {
			continue
		}
		mainSeen = mainSeen || f[0] == module+"/cmd/spyder"
		if f[1] != "main" {
			t.Errorf("%s (package %s) imports internal/gcpace; only a main package may", f[0], f[1])
		}
	}
	if !mainSeen {
		t.Error("cmd/spyder was not seen importing internal/gcpace; the import lists were not read right")
	}
}

// TestLayout_StoresImportNoWorker: the run loop drives the stores, never
// the other way: no store package, its test support and its tests
// included, imports package worker (the loop's benchmark over each store
// lives in worker).
func TestLayout_StoresImportNoWorker(t *testing.T) {
	for _, d := range reaches(deps(t, "./../../store/..."), module+"/worker") {
		t.Errorf("a store package depends on %s", d)
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./../../store/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && slices.Contains(f[1:], module+"/worker") {
			t.Errorf("the tests of %s import worker", f[0])
		}
	}
}

// TestLayout_WorkerMethodsTakeOneContext: each of the run loop's services
// works under one context; a call that must not be cut short derives one
// without cancellation (context.WithoutCancel) rather than taking a
// second context beside the first.
func TestLayout_WorkerMethodsTakeOneContext(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(root, "worker", "*.go"))
	if err != nil || len(files) < 5 {
		t.Fatalf("worker has %d Go files (%v); want the package", len(files), err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			if n := contexts(fn.Type.Params); n > 1 {
				t.Errorf("%s: method %s takes %d contexts; want one", fset.Position(fn.Pos()), fn.Name.Name, n)
			}
		}
	}
}

// contexts counts the parameters of type context.Context in ps.
func contexts(ps *ast.FieldList) int {
	n := 0
	for _, p := range ps.List {
		sel, ok := p.Type.(*ast.SelectorExpr)
		if !ok {
			continue
		}
		if x, isIdent := sel.X.(*ast.Ident); isIdent && x.Name == "context" && sel.Sel.Name == "Context" {
			n += max(len(p.Names), 1)
		}
	}
	return n
}

// TestLayout_TablesSpeakOnlyTheVocabulary: the Parquet table writer is
// shared by the run's sink and the graph tools, so it imports nothing of
// ours but the output's types (spyder and host).
func TestLayout_TablesSpeakOnlyTheVocabulary(t *testing.T) {
	for _, imp := range imports(t, module+"/tables") {
		if strings.HasPrefix(imp, module+"/") && imp != module+"/host" {
			t.Errorf("package tables imports %s; want nothing of ours but spyder and host", imp)
		}
	}
}
