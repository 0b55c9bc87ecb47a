package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/spyder-crawler/spyder/internal/docstest"
)

// docsRoot is the repository root, relative to this package.
const docsRoot = "../.."

// docsPages returns the text of README.md and of every page under docs/,
// keyed by path from the repository root.
func docsPages(tb testing.TB) map[string]string { return docstest.Pages(tb, docsRoot) }

// shownCommand is one `spyder …` command a page shows: the words after
// "spyder", up to the end of the command (a pipe, a redirect, a comment).
type shownCommand struct {
	where string // page:line
	words []string
}

var (
	fence      = regexp.MustCompile("^\\s*```\\s*(\\S*)")
	codeSpan   = regexp.MustCompile("`([^`]+)`")
	commandEnd = map[string]bool{"|": true, "||": true, "&&": true, ";": true, ">": true, "<": true, "2>": true, "…": true}
)

// shownCommands returns every spyder command in text: in code blocks (in
// a console block only the lines after a "$ " prompt), and in code spans
// that start with "spyder ".
func shownCommands(page, text string) []shownCommand {
	var out []shownCommand
	inBlock, lang := false, ""
	for i, line := range strings.Split(text, "\n") {
		where := page + ":" + strconv.Itoa(i+1)
		if m := fence.FindStringSubmatch(line); m != nil {
			inBlock, lang = !inBlock, m[1]
			continue
		}
		switch {
		case inBlock && lang == "console":
			if rest, ok := strings.CutPrefix(line, "$ "); ok {
				out = append(out, commandsIn(where, rest)...)
			}
		case inBlock && lang != "json":
			out = append(out, commandsIn(where, line)...)
		case !inBlock:
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				if strings.HasPrefix(m[1], "spyder ") {
					out = append(out, commandsIn(where, m[1])...)
				}
			}
		}
	}
	return out
}

// commandsIn finds the word "spyder" (or "(spyder", "<(spyder") in line
// and returns each command that follows: the one that starts the line or
// follows a pipe or a separator, and, further in (an image named spyder,
// a word of prose in a comment), one whose next word names a command.
// A message quoted from spyder ("spyder graph: …") is no command.
func commandsIn(where, line string) []shownCommand {
	var out []shownCommand
	fields := strings.Fields(line)
	for i, f := range fields {
		if strings.TrimLeft(f, "<($") != "spyder" {
			continue
		}
		starts := i == 0 || f != "spyder" || commandEnd[fields[i-1]]
		if i+1 < len(fields) && strings.HasSuffix(fields[i+1], ":") ||
			!starts && (i+1 == len(fields) || !isCommandName(fields[i+1])) {
			continue
		}
		var words []string
		for _, w := range fields[i+1:] {
			if commandEnd[w] || strings.HasPrefix(w, "#") || strings.HasPrefix(w, "`") {
				break
			}
			last := strings.HasSuffix(w, ")")
			words = append(words, strings.TrimRight(w, ")`"))
			if last {
				break
			}
		}
		out = append(out, shownCommand{where, words})
	}
	return out
}

// isCommandName reports whether w names a top-level command of spyder.
func isCommandName(w string) bool {
	return w == "help" || findCommand(&cli.Command{Subcommands: newApp(nil, nil).Commands}, []string{w}) != nil
}

// TestDocs_CommandsExist fails when README.md or a page of docs/ shows a
// spyder command the binary does not have, or gives a command a flag it
// does not take.
func TestDocs_CommandsExist(t *testing.T) {
	root := &cli.Command{Subcommands: newApp(nil, nil).Commands}
	shown := 0
	for page, text := range docsPages(t) {
		for _, c := range shownCommands(page, text) {
			cmd, path := root, []string{}
			for _, w := range c.words {
				if w == "help" && len(path) == 0 {
					path = append(path, w) // urfave/cli's own: help [COMMAND…]
					continue
				}
				next := findCommand(cmd, []string{w})
				if next == nil {
					break
				}
				cmd, path = next, append(path, w)
			}
			if rest := c.words[len(path):]; len(rest) > 0 && !strings.HasPrefix(rest[0], "-") &&
				(len(path) == 0 || len(cmd.Subcommands) > 0 && path[0] != "help") {
				t.Errorf("%s: `spyder %s`: no such command", c.where, strings.Join(c.words, " "))
				continue
			}
			shown++
			for _, w := range c.words[len(path):] {
				name, ok := strings.CutPrefix(w, "--")
				if !ok {
					continue
				}
				name, _, _ = strings.Cut(strings.TrimRight(name, ",.:"), "=")
				if name != "help" && !(len(path) == 0 && name == "version") && !hasFlag(cmd, name) {
					t.Errorf("%s: `spyder %s` has no flag --%s", c.where, strings.Join(path, " "), name)
				}
			}
		}
	}
	if shown < 20 {
		t.Errorf("found %d spyder commands in the docs; the parser has gone wrong", shown)
	}
}

// TestDocs_EveryFlagDocumented fails when a command of the binary has a
// visible flag that README.md and docs/ never mention as --name.
func TestDocs_EveryFlagDocumented(t *testing.T) {
	mentioned := map[string]bool{}
	for _, text := range docsPages(t) {
		for _, m := range regexp.MustCompile(`--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(text, -1) {
			mentioned[m[1]] = true
		}
	}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			path := strings.TrimSpace(prefix + " " + c.Name)
			for _, f := range c.VisibleFlags() {
				if name := f.Names()[0]; name != "help" && !mentioned[name] {
					t.Errorf("spyder %s --%s is in no page of the docs", path, name)
				}
			}
			walk(path, c.Subcommands)
		}
	}
	walk("", newApp(nil, nil).Commands)
}

// withoutBlocks returns text without its fenced code blocks, whose
// backticks would pair up with those of the prose.
func withoutBlocks(text string) string {
	var out []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		if fence.MatchString(l) {
			in = !in
		} else if !in {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestDocs_FlagsExist fails when a page shows a flag on its own (a code
// span such as `--lease D`) that no spyder command has.
func TestDocs_FlagsExist(t *testing.T) {
	all := map[string]bool{"help": true, "version": true}
	var walk func(cmds []*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			for _, f := range c.Flags {
				for _, n := range f.Names() {
					all[n] = true
				}
			}
			walk(c.Subcommands)
		}
	}
	walk(newApp(nil, nil).Commands)
	flag := regexp.MustCompile("^--([a-z][a-z0-9-]*)")
	shown := 0
	for page, text := range docsPages(t) {
		for _, m := range codeSpan.FindAllStringSubmatch(withoutBlocks(text), -1) {
			if f := flag.FindStringSubmatch(m[1]); f != nil {
				shown++
				if !all[f[1]] {
					t.Errorf("%s shows %s, which no spyder command has", page, m[0])
				}
			}
		}
	}
	if shown < 50 {
		t.Errorf("found %d flags in the docs; the parser has gone wrong", shown)
	}
}

// TestDocs_TestsNamed fails when a page names a test, benchmark or fuzz
// target (or a -run prefix of one) that no _test.go file defines, so the
// commands the docs give to reproduce a figure keep running something.
func TestDocs_TestsNamed(t *testing.T) {
	var funcs []string
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w+)\(`)
	err := filepath.WalkDir(docsRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		for _, m := range decl.FindAllStringSubmatch(string(data), -1) {
			funcs = append(funcs, m[1])
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z]\w*`)
	checked := 0
	for page, text := range docsPages(t) {
		for _, name := range named.FindAllString(text, -1) {
			checked++
			if !slices.ContainsFunc(funcs, func(f string) bool { return strings.HasPrefix(f, name) }) {
				t.Errorf("%s names %s, which no test file defines", page, name)
			}
		}
	}
	if checked < 20 || len(funcs) < 200 {
		t.Errorf("%d test names found in the docs and %d defined; the pages or test files were not read right", checked, len(funcs))
	}
}
