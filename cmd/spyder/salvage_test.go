package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spyder-crawler/spyder/store/boltstore/bolttest"
)

// runBinary runs the spyder binary built for the tests and returns its
// stdout, stderr and exit status.
func runBinary(tb testing.TB, args ...string) (stdout, stderr string, code int) {
	tb.Helper()
	cmd := exec.Command(mustBinary(tb), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Stdin = strings.NewReader("")
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		tb.Fatalf("spyder %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// TestE2E_DamagedDB runs every command that takes --db on files truncated
// at several offsets and with bytes overwritten in the meta, freelist,
// branch and leaf pages: each exits 1 with one line naming the file and
// what is wrong (no stack trace), and leaves the file as it was. Then
// `spyder queue salvage` copies every record the damage left readable
// into a new file, and lists what it lost.
func TestE2E_DamagedDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hosts := mustDomains(t, []string{"new-host.example.com"})
	export := mustFile(t, "export.jsonl", []byte(`{"kind":"seen","host":"a.example.com"}`+"\n"))
	out := filepath.Join(dir, "out.jsonl")
	// "" stands for the damaged file; flags go before file names.
	commands := [][]string{
		{"run", "--db", "", "--domains", hosts, "--out", out}, {"queue", "stats", "--db", ""},
		{"queue", "seed", "--db", "", hosts}, {"queue", "export", "--db", ""}, {"queue", "import", "--db", "", export},
		{"queue", "dead", "list", "--db", ""}, {"queue", "dead", "retry", "--db", ""},
		{"queue", "dead", "purge", "--yes", "--db", ""}, {"queue", "reclaim", "--db", ""},
	}
	for _, c := range bolttest.MustCases(t, dir) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			before, err := os.ReadFile(c.Damaged)
			if err != nil {
				t.Fatal(err)
			}
			for _, cmd := range commands {
				args := slices.Clone(cmd)
				args[slices.Index(args, "")] = c.Damaged
				stdout, stderr, code := runBinary(t, args...)
				if code != 1 || strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") != 0 || stdout != "" ||
					!strings.Contains(stderr, c.Damaged+" is damaged") || strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
					t.Errorf("spyder %v: exit %d, stdout %q, stderr %q; want exit 1 and one line saying %s is damaged",
						cmd, code, stdout, stderr, c.Damaged)
				}
			}
			if after, _ := os.ReadFile(c.Damaged); !bytes.Equal(before, after) {
				t.Errorf("the commands changed the damaged file")
			}

			to := filepath.Join(t.TempDir(), "salvaged.db")
			stdout, stderr, code := runBinary(t, "queue", "salvage", "--db", c.Damaged, "--to", to)
			if code != 0 || !strings.Contains(stdout, "lost: ") || strings.Contains(stdout, "lost: nothing") {
				t.Fatalf("spyder queue salvage: exit %d, stdout %q, stderr %q; want exit 0 and what was lost", code, stdout, stderr)
			}
			bolttest.MustMatch(t, c, to)
			// The seen line tells how many of the seen hosts the file counted
			// were lost.
			base, _ := bolttest.Records(t, c.Base)
			got, _ := bolttest.Records(t, to)
			seen, lost := bolttest.CountBucket(got, "seen"), bolttest.CountBucket(base, "seen")-bolttest.CountBucket(got, "seen")
			if fields := seenLine(stdout); fields != nil && !slices.Equal(fields, []string{"seen", fmt.Sprint(seen), fmt.Sprint(seen + lost), fmt.Sprint(lost)}) {
				t.Errorf("salvage's seen line = %q, want %d copied, %d counted, %d lost", fields, seen, seen+lost, lost)
			}
			if _, stderr, code := runBinary(t, "queue", "stats", "--db", to); code != 0 {
				t.Errorf("spyder queue stats on the salvaged copy: exit %d, stderr %q", code, stderr)
			}
		})
	}
}

// TestE2E_SalvageRefuses: salvage never writes over a file, nor over the
// file it reads, and says why in one line.
func TestE2E_SalvageRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := bolttest.MustFixture(t, dir)
	exists := mustFile(t, "exists.db", []byte("keep me"))
	before, _ := os.ReadFile(src)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"ToExists", []string{"--db", src, "--to", exists}, 1, exists + " already exists"},
		{"ToIsDB", []string{"--db", src, "--to", src}, 1, src + " is the file to salvage"},
		{"ToIsDBOtherName", []string{"--db", src, "--to", filepath.Join(dir, ".", "..", filepath.Base(dir), "fixture.db")}, 1, "is the file to salvage"},
		{"NoTo", []string{"--db", src}, 2, "needs --db (the damaged file) and --to"},
		{"DBMissing", []string{"--db", filepath.Join(dir, "none.db"), "--to", filepath.Join(dir, "new.db")}, 1, "none.db"},
	}
	for _, tt := range tests {
		_, stderr, code := runBinary(t, append([]string{"queue", "salvage"}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) || strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line with %q", tt.name, code, stderr, tt.code, tt.want)
		}
	}
	if got, _ := os.ReadFile(exists); string(got) != "keep me" {
		t.Errorf("salvage overwrote an existing --to")
	}
	if after, _ := os.ReadFile(src); !bytes.Equal(before, after) {
		t.Errorf("salvage changed --db")
	}
	if _, err := os.Stat(filepath.Join(dir, "new.db")); err == nil {
		t.Errorf("a failed salvage left its --to behind")
	}
}

// seenLine returns the fields of the seen bucket's line of a salvage
// report, or nil when the file's counts were lost with their page.
func seenLine(report string) []string {
	for _, l := range strings.Split(report, "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "seen" {
			return f
		}
	}
	return nil
}
