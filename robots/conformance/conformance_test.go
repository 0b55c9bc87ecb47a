package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// caseFile is a suite file in the current format: concatenated literals,
// escapes, comments, lists with and without commas. Its third expectation
// is wrong on purpose, so one case of four fails.
const caseFile = `# a comment
tests: [
  {
    robotstxt: "\xEF\xBB\xBF" "User-agent: FooBot\r"
        'Disallow: /a\n'  # the mark, a lone CR, single quotes
        "Allow: /a/\042b\"\n"
    test_expectations: [
      { testurl: "http://x.org/a/x" useragent: "FooBot" expected_outcome: DISALLOWED },
      { testurl: "http://x.org/a/\"b\"" useragent: "foobot" expected_outcome: ALLOWED additional_explanation: "a" "b" },
      { testurl: "http://x.org/z" useragent: "FooBot" expected_outcome: DISALLOWED test_type: GOOGLE_SPECIFIC }
    ]
  },
  {
    robotstxt: ""
    test_expectations { testurl: "" useragent: "" expected_outcome: ALLOWED }
  }
]
`

// oldFile is in the suite's older format (test_situations).
const oldFile = `tests {
  robotstxt: "user-agent: *\ndisallow: /deny\n"
  test_situations: [ { testurl: "http://x.org/deny" useragent: "Bot" expected_outcome: DISALLOWED } ]
}
`

func writeSuite(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestParseText(t *testing.T) {
	m, err := parseText(caseFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := m["tests"]
	if len(tests) != 2 {
		t.Fatalf("got %d tests, want 2", len(tests))
	}
	want := "\xEF\xBB\xBFUser-agent: FooBot\rDisallow: /a\nAllow: /a/\"b\"\n"
	if got := tests[0].msg.str("robotstxt"); got != want {
		t.Errorf("robotstxt = %q, want %q", got, want)
	}
	exps := tests[0].msg["test_expectations"]
	if len(exps) != 3 || exps[1].msg.str("additional_explanation") != "ab" || exps[2].msg.str("expected_outcome") != "DISALLOWED" {
		t.Errorf("expectations = %+v", exps)
	}
}

func TestParseText_Errors(t *testing.T) {
	for _, src := range []string{
		`tests: [ { robotstxt: "open`,
		`tests: { robotstxt: "a" `,
		`tests: { robotstxt: "\q" }`,
		`: "x"`,
	} {
		if _, err := parseText(src); err == nil {
			t.Errorf("parseText(%q) succeeded, want an error", src)
		}
	}
}

func TestRun_InProcess(t *testing.T) {
	dir := writeSuite(t, map[string]string{"a/cases.textproto": caseFile, "old.textproto": oldFile, "README.md": "not a case"})
	var out, errOut bytes.Buffer
	if code := run([]string{"-suite", dir, "-v"}, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1 (one case fails); stderr %s", code, errOut.String())
	}
	for _, want := range []string{
		"a/cases.textproto", "3 of   4 passed",
		`FAIL ua "FooBot" url "http://x.org/z": want DISALLOWED`,
		"old.textproto", "1 of   1 passed",
		"total: 4 of 5 cases passed in 2 files",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRun_Exec drives a real executable in exit-code mode: a script that
// allows every URL but those containing "deny", like `spyder robots`
// called with --ua UA FILE URL.
func TestRun_Exec(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fake-spyder")
	script := "#!/bin/sh\n[ \"$1 $2\" = 'robots --ua' ] && [ -f \"$4\" ] || exit 2\ncase \"$5\" in *deny*) exit 1;; esac\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := writeSuite(t, map[string]string{"old.textproto": oldFile})
	var out, errOut bytes.Buffer
	if code := run([]string{"-suite", dir, "-spyder", bin}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d, want 0; stdout %s stderr %s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "total: 1 of 1 cases passed in 1 files") {
		t.Errorf("output: %s", out.String())
	}

	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if code := run([]string{"-suite", dir, "-spyder", bin}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "exit status 2") {
		t.Errorf("a binary that fails: exit %d, stderr %q", code, errOut.String())
	}
}

func TestRun_BadInput(t *testing.T) {
	bad := writeSuite(t, map[string]string{"bad.textproto": `tests: [ { robotstxt: "x`})
	noOutcome := writeSuite(t, map[string]string{"x.textproto": `tests { robotstxt: "" test_expectations { testurl: "/" } }`})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "usage"},
		{[]string{"-suite", filepath.Join(t.TempDir(), "missing")}, "no such file"},
		{[]string{"-suite", t.TempDir()}, "no .textproto file"},
		{[]string{"-suite", bad}, "bad.textproto: line 1"},
		{[]string{"-suite", noOutcome}, `expected_outcome ""`},
	} {
		var out, errOut bytes.Buffer
		if code := run(c.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("run(%q): exit %d, stderr %q, want 2 and %q", c.args, code, errOut.String(), c.want)
		}
	}
}
