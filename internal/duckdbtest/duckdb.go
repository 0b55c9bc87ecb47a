// Package duckdbtest runs SQL in DuckDB for tests that read spyder's
// Parquet (and JSON) output back with a real engine. DuckDB comes from npm
// (@duckdb/node-api, run by node), installed once into a cache folder.
// Without node or npm a test skips, unless SPYDER_REQUIRE_TOOLS or CI is
// set (make test; make deps installs nodejs and npm), when it fails.
package duckdbtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// Version is the @duckdb/node-api release the tests run.
const Version = "1.5.6-r.1"

// script runs the SQL statements of its JSON argument in order in one
// in-memory database and prints each one's rows: a JSON array of arrays.
const script = `
import { DuckDBInstance } from '@duckdb/node-api';
const stmts = JSON.parse(process.argv[2]);
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const out = [];
for (const s of stmts) { out.push((await c.runAndReadAll(s)).getRowObjectsJson()); }
process.stdout.write(JSON.stringify(out));
`

var (
	once    sync.Once
	dir     string
	fromErr error
)

// Dir returns the folder holding node_modules/@duckdb/node-api and the
// script, installing it on first use; it skips or fails tb without node.
func Dir(tb testing.TB) string {
	tb.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" || os.Getenv("SPYDER_REQUIRE_TOOLS") != "" {
				tb.Fatalf("%s is not installed (make deps installs it)", tool)
			}
			tb.Skipf("%s is not installed (make deps installs it)", tool)
		}
	}
	once.Do(func() { dir, fromErr = install() })
	if fromErr != nil {
		tb.Fatalf("install @duckdb/node-api: %v", fromErr)
	}
	return dir
}

// install puts the package in <user cache>/spyder-test/duckdb-<Version>,
// under a lock, since test binaries of several packages run at once.
func install() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	d := filepath.Join(cache, "spyder-test", "duckdb-"+Version)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(d, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(d, "query.mjs"), []byte(script), 0o644); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(d, "node_modules", "@duckdb", "node-api", "package.json")); err == nil {
		return d, nil
	}
	os.WriteFile(filepath.Join(d, "package.json"), []byte(`{"private":true}`), 0o644)
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--silent", "@duckdb/node-api@"+Version)
	cmd.Dir = d
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install: %v\n%s", err, out)
	}
	return d, nil
}

// Query runs stmts in one fresh database and returns the last one's rows.
// DuckDB's BIGINTs and HUGEINTs come as strings; see [Int].
func Query(tb testing.TB, stmts ...string) []map[string]any {
	tb.Helper()
	all := Each(tb, stmts...)
	return all[len(all)-1]
}

// Each runs stmts in one fresh database (one node process, which takes
// most of a second to start) and returns every statement's rows.
func Each(tb testing.TB, stmts ...string) [][]map[string]any {
	tb.Helper()
	d := Dir(tb)
	arg, _ := json.Marshal(stmts)
	cmd := exec.Command("node", filepath.Join(d, "query.mjs"), string(arg))
	cmd.Dir = d
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("duckdb: %v\n%s\nSQL: %q", err, stderr.Bytes(), stmts)
	}
	var rows [][]map[string]any
	if err := json.Unmarshal(out, &rows); err != nil || len(rows) != len(stmts) {
		tb.Fatalf("duckdb output: %v: %.500s", err, out)
	}
	return rows
}

// Int is a number DuckDB returned, whether as a JSON number or a string.
func Int(tb testing.TB, v any) int64 {
	tb.Helper()
	switch x := v.(type) {
	case float64:
		return int64(x)
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			tb.Fatalf("duckdb value %q is not an integer", x)
		}
		return n
	}
	tb.Fatalf("duckdb value %v (%T) is not an integer", v, v)
	return 0
}

// Count runs stmts and returns the single integer the last one selects.
func Count(tb testing.TB, stmts ...string) int64 {
	tb.Helper()
	rows := Query(tb, stmts...)
	if len(rows) != 1 || len(rows[0]) != 1 {
		tb.Fatalf("duckdb: want one value, got %v\nSQL: %q", rows, stmts)
	}
	for _, v := range rows[0] {
		return Int(tb, v)
	}
	return 0
}
