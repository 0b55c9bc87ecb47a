// Command conformance runs the robots.txt conformance cases of Google's
// robotstxt-spec-test (its textproto files, fetched separately) against
// spyder's robots.txt reading, and prints how many pass, per file and in
// total:
//
//	go run ./robots/conformance -suite DIR [-spyder BIN] [-v]
//
// DIR is searched for *.textproto files, each a RobotsTxtSpecification:
// tests, each with a robotstxt and its expectations (test_expectations, or
// test_situations in the suite's older files) of a testurl, a useragent
// and an expected_outcome, ALLOWED or DISALLOWED. A case passes when the
// answer is the expected one. Without -spyder the cases are decided in
// this process, by the function `spyder robots` calls; with -spyder each
// runs `BIN robots --ua UA FILE URL` and reads its exit status (0
// allowed, 1 disallowed), as the suite's own harness drives a binary.
//
// Exit status: 0 when every case passes, 1 when some fail, 2 for bad
// input (no such directory, a file that does not parse).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spyder-crawler/spyder/robots"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fl.SetOutput(stderr)
	suite := fl.String("suite", "", "directory of the suite's `.textproto` files (searched recursively)")
	bin := fl.String("spyder", "", "run each case through `BIN` robots (exit-code mode) instead of in process")
	verbose := fl.Bool("v", false, "list every failing case")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *suite == "" || fl.NArg() > 0 {
		fmt.Fprintln(stderr, "conformance: usage: conformance -suite DIR [-spyder BIN] [-v]")
		return 2
	}
	decide := decideInProcess
	if *bin != "" {
		decide = execDecider(*bin)
	}
	files, err := suiteFiles(*suite)
	if err != nil {
		fmt.Fprintf(stderr, "conformance: suite %s: %v\n", *suite, err)
		return 2
	}
	var total tally
	for _, f := range files {
		t, err := runFile(f, decide)
		if err != nil {
			fmt.Fprintf(stderr, "conformance: %v\n", err)
			return 2
		}
		rel, _ := filepath.Rel(*suite, f)
		fmt.Fprintf(stdout, "%-48s %3d of %3d passed\n", rel, t.passed, t.cases)
		if *verbose {
			for _, fail := range t.failures {
				fmt.Fprintln(stdout, "    FAIL", fail)
			}
		}
		total.add(t)
	}
	fmt.Fprintf(stdout, "total: %d of %d cases passed in %d files\n", total.passed, total.cases, len(files))
	if total.passed < total.cases {
		return 1
	}
	return 0
}

// suiteFiles returns the .textproto files under dir, in lexical order.
func suiteFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".textproto") {
			out = append(out, path)
		}
		return err
	})
	if err == nil && len(out) == 0 {
		err = errors.New("no .textproto file in it")
	}
	return out, err
}

// tally counts a file's cases, and describes those that failed.
type tally struct {
	cases, passed int
	failures      []string
}

func (t *tally) add(u tally) {
	t.cases += u.cases
	t.passed += u.passed
	t.failures = append(t.failures, u.failures...)
}

// decider answers one case: allowed or not, or an error when it could not.
type decider func(robotsTxt []byte, ua, url string) (bool, error)

// runFile runs every case of one suite file.
func runFile(path string, decide decider) (tally, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return tally{}, err
	}
	m, err := parseText(string(src))
	if err != nil {
		return tally{}, fmt.Errorf("%s: %v", path, err)
	}
	var t tally
	for i, test := range m["tests"] {
		if test.msg == nil {
			return t, fmt.Errorf("%s: test %d is not a message", path, i+1)
		}
		exps := append(test.msg["test_expectations"], test.msg["test_situations"]...)
		for _, e := range exps {
			if e.msg == nil {
				return t, fmt.Errorf("%s: test %d: an expectation is not a message", path, i+1)
			}
			if err := runCase(&t, test.msg.str("robotstxt"), e.msg, decide); err != nil {
				return t, fmt.Errorf("%s: test %d: %v", path, i+1, err)
			}
		}
	}
	return t, nil
}

// runCase decides one expectation of a test and counts it.
func runCase(t *tally, robotsTxt string, e message, decide decider) error {
	ua, url, want := e.str("useragent"), e.str("testurl"), e.str("expected_outcome")
	if want != "ALLOWED" && want != "DISALLOWED" {
		return fmt.Errorf("expected_outcome %q: want ALLOWED or DISALLOWED", want)
	}
	allowed, err := decide([]byte(robotsTxt), ua, url)
	if err != nil {
		return err
	}
	t.cases++
	if allowed == (want == "ALLOWED") {
		t.passed++
		return nil
	}
	t.failures = append(t.failures, fmt.Sprintf("ua %q url %q: want %s; robots.txt %q", ua, url, want, robotsTxt))
	return nil
}

// decideInProcess answers as `spyder robots` does.
func decideInProcess(robotsTxt []byte, ua, url string) (bool, error) {
	return robots.DecideFile(robotsTxt, strings.TrimSpace(ua), url).Allowed, nil
}

// execDecider answers by running `bin robots --ua UA FILE URL` on a
// temporary copy of the robots.txt and reading its exit status.
func execDecider(bin string) decider {
	return func(robotsTxt []byte, ua, url string) (bool, error) {
		f, err := os.CreateTemp("", "robots-*.txt")
		if err != nil {
			return false, err
		}
		defer os.Remove(f.Name())
		if _, err := f.Write(robotsTxt); err != nil {
			f.Close()
			return false, err
		}
		if err := f.Close(); err != nil {
			return false, err
		}
		err = exec.Command(bin, "robots", "--ua", ua, f.Name(), url).Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return true, nil
		case errors.As(err, &exit) && exit.ExitCode() == 1:
			return false, nil
		}
		return false, fmt.Errorf("%s robots --ua %q %s %q: %v", bin, ua, f.Name(), url, err)
	}
}
