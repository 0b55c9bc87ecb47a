package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRobotsCommand drives `spyder robots` through the built binary, as a
// conformance harness does: verdict line on stdout, exit status 0 for
// allowed, 1 for disallowed, 2 and one line on stderr for bad input.
func TestRobotsCommand(t *testing.T) {
	bin := mustBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "robots.txt")
	body := "\xEF\xBB\xBFUser-agent: *\rDisallow: /\r\rUser-agent: spyder*\nAllow: /a\nDisallow: /a/b\ndisallow /ツ\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// A rule past the 512 KiB a crawl reads is ignored here too; one
	// before it is not.
	long := filepath.Join(dir, "long.txt")
	pad := "User-agent: spyder\nDisallow: /early\n" + strings.Repeat("# padding\n", 53000) + "Disallow: /late\n"
	if err := os.WriteFile(long, []byte(pad), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{file, "https://e.com/a/b/c"}, 1, `DISALLOWED by "Disallow: /a/b" (line 6) in group "User-agent: spyder*" (line 4)` + "\n", ""},
		{[]string{file, "https://e.com/a/x?q=1"}, 0, `ALLOWED by "Allow: /a" (line 5) in group "User-agent: spyder*" (line 4)` + "\n", ""},
		{[]string{file, "https://e.com/%E3%83%84/x"}, 1, `DISALLOWED by "Disallow: /ツ" (line 7) in group "User-agent: spyder*" (line 4)` + "\n", ""},
		{[]string{file, "https://e.com/z"}, 0, `ALLOWED: no rule matches in group "User-agent: spyder*" (line 4)` + "\n", ""},
		{[]string{"--ua", "OtherBot", file, "https://e.com/a"}, 1, `DISALLOWED by "Disallow: /" (line 2) in group "User-agent: *" (line 1)` + "\n", ""},
		{[]string{long, "https://e.com/early"}, 1, `DISALLOWED by "Disallow: /early" (line 2) in group "User-agent: spyder" (line 1)` + "\n", ""},
		{[]string{long, "https://e.com/late"}, 0, `ALLOWED: no rule matches in group "User-agent: spyder" (line 1)` + "\n", ""},
		{[]string{filepath.Join(dir, "missing.txt"), "https://e.com/"}, 2, "", "spyder: robots file " + filepath.Join(dir, "missing.txt") + ": no such file or directory\n"},
		{[]string{dir, "https://e.com/"}, 2, "", "spyder: robots file " + dir + ": is a directory\n"},
		{[]string{file}, 2, "", "spyder: robots takes ROBOTS_FILE and URL, got 1 argument (see spyder robots --help)\n"},
		{[]string{file, "/a", "/b"}, 2, "", "spyder: robots takes ROBOTS_FILE and URL, got 3 arguments (see spyder robots --help)\n"},
		{[]string{file, ""}, 0, `ALLOWED: no rule matches in group "User-agent: spyder*" (line 4)` + "\n", ""},
		{[]string{"--ua", "Foo Bar", file, "https://e.com/a"}, 1, `DISALLOWED by "Disallow: /" (line 2) in group "User-agent: *" (line 1)` + "\n", ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, append([]string{"robots"}, tt.args...)...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code || stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q",
					code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}
