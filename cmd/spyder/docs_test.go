package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

// operatingPage is the docs page that holds the flag tables of `spyder
// run` and the list of `spyder queue` verbs, relative to this package.
const operatingPage = "../../docs/operating.md"

// readmeFlag is one row of the flag table of `spyder run` in operatingPage.
type readmeFlag struct {
	Env     []string
	Default string
}

// mustReadmeRunFlags reads the flag table under "### `spyder run`" in
// operatingPage.
func mustReadmeRunFlags(tb testing.TB) map[string]readmeFlag {
	tb.Helper()
	f, err := os.Open(operatingPage)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	flags := map[string]readmeFlag{}
	in := false
	tick := regexp.MustCompile("`([^`]*)`")
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case line == "### `spyder run`":
			in = true
		case in && strings.HasPrefix(line, "#"):
			return flags
		case in && strings.HasPrefix(line, "| `--"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 4 {
				tb.Fatalf("%s: flag row %q: want 4 cells", operatingPage, line)
			}
			name := strings.Fields(strings.Trim(strings.TrimSpace(cells[0]), "`"))[0]
			var env []string
			for _, m := range tick.FindAllStringSubmatch(cells[1], -1) {
				env = append(env, m[1])
			}
			flags[strings.TrimPrefix(name, "--")] = readmeFlag{Env: env, Default: strings.Trim(strings.TrimSpace(cells[2]), "`")}
		}
	}
	if len(flags) == 0 {
		tb.Fatalf("no flag table under ### `spyder run` in %s", operatingPage)
	}
	return flags
}

// cliDefault is how the docs show f's default: its DefaultText when it
// has one, on or off for a switch, a duration as written, else the value.
func cliDefault(f cli.Flag) string {
	df := f.(cli.DocGenerationFlag)
	val := strings.Trim(df.GetDefaultText(), `"`)
	if !df.TakesValue() {
		return map[string]string{"true": "on", "false": "off"}[val]
	}
	return val
}

// TestDocs_RunFlags fails when the flag table of `spyder run` in
// docs/operating.md and the flags the binary defines differ: a flag on one
// side only, or a different environment variable or default.
func TestDocs_RunFlags(t *testing.T) {
	readme := mustReadmeRunFlags(t)
	got := map[string]readmeFlag{}
	for _, f := range runCommand().VisibleFlags() {
		df := f.(cli.DocGenerationFlag)
		def := cliDefault(f)
		if r, ok := readme[f.Names()[0]]; ok {
			// Durations may be written short (2m for 2m0s), and the
			// version in the user agent as <version>.
			if d, err := time.ParseDuration(r.Default); err == nil && fmt.Sprint(d) == def {
				def = r.Default
			}
			def = strings.Replace(def, spyder.Version, "<version>", 1)
		}
		got[f.Names()[0]] = readmeFlag{Env: df.GetEnvVars(), Default: def}
	}
	if diff := cmp.Diff(readme, got); diff != "" {
		t.Errorf("%s: the flags of spyder run differ from the binary's (-docs +binary):\n%s", operatingPage, diff)
	}
}

// TestDocs_QueueVerbs checks the list of `spyder queue` verbs in
// docs/operating.md and their flags against the commands the binary
// defines, both ways.
func TestDocs_QueueVerbs(t *testing.T) {
	data, err := os.ReadFile(operatingPage)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "### `spyder queue …`")
	end := -1
	if start >= 0 {
		end = strings.Index(text[start:], "### Exit status")
	}
	if start < 0 || end < 0 {
		t.Fatalf("no ### `spyder queue …` section in %s", operatingPage)
	}
	section := strings.Join(strings.Fields(text[start+len("### `spyder queue …`"):start+end]), " ")
	var mentioned []string
	for _, m := range regexp.MustCompile("`([a-z][a-z-]*(?: [a-z][a-z-]*)*)((?: [^`]*)?)`").FindAllStringSubmatch(section, -1) {
		verb := strings.TrimSpace(m[1])
		mentioned = append(mentioned, verb)
		cmd := findCommand(queueCommand(), strings.Fields(verb))
		if cmd == nil {
			t.Errorf("docs name `spyder queue %s`, which does not exist", verb)
			continue
		}
		for _, f := range regexp.MustCompile(`--([a-z-]+)`).FindAllStringSubmatch(m[2], -1) {
			if !hasFlag(cmd, f[1]) {
				t.Errorf("docs give `spyder queue %s` the flag --%s, which it does not have", verb, f[1])
			}
		}
	}
	for _, leaf := range leafCommands(queueCommand(), "") {
		if !slices.Contains(mentioned, leaf.path) {
			t.Errorf("docs do not list `spyder queue %s`", leaf.path)
		}
		for _, f := range []string{"db", "redis", "queue-key", "log-level", "config"} {
			if leaf.path == "salvage" && f != "db" && f != "config" {
				continue // bbolt only, and said so
			}
			if !hasFlag(leaf.cmd, f) {
				t.Errorf("docs say every queue verb takes --%s; %s does not", f, leaf.path)
			}
		}
	}
}

type leaf struct {
	path string
	cmd  *cli.Command
}

// leafCommands returns the commands under c that have no subcommands of
// their own (help excluded), by their path of names.
func leafCommands(c *cli.Command, prefix string) []leaf {
	var out []leaf
	for _, sub := range c.Subcommands {
		path := strings.TrimSpace(prefix + " " + sub.Name)
		if len(sub.Subcommands) == 0 {
			out = append(out, leaf{path, sub})
		} else {
			out = append(out, leafCommands(sub, path)...)
		}
	}
	return out
}

func findCommand(c *cli.Command, path []string) *cli.Command {
	for _, name := range path {
		var next *cli.Command
		for _, sub := range c.Subcommands {
			if sub.HasName(name) {
				next = sub
			}
		}
		if next == nil {
			return nil
		}
		c = next
	}
	return c
}

func hasFlag(c *cli.Command, name string) bool {
	for _, f := range c.Flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}
