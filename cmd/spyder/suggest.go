package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"
)

// closest returns the word of known closest to word, or "" when none is
// close enough to be a likely typo: similar by Jaro-Winkler (good at long
// words sharing a start), or one edit away (short words, where a single
// slip moves Jaro-Winkler far).
func closest(word string, known []string) string {
	best, score := "", 0.0
	for _, k := range known {
		s := smetrics.JaroWinkler(word, k, 0.7, 4)
		if s < 0.85 && smetrics.WagnerFischer(word, k, 1, 1, 1) > 1 {
			continue
		}
		if s > score {
			best, score = k, s
		}
	}
	return best
}

// suggestCommand returns ` (did you mean "x"?)` for the command of cmds
// closest to name, or "".
func suggestCommand(name string, cmds []*cli.Command) string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	if best := closest(name, names); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// unknownFlag rewrites the parser's `flag provided but not defined: -x`
// as `unknown flag --x`, with the closest flag of flags when one is close;
// other errors are returned as they are.
func unknownFlag(flags []cli.Flag, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return err
	}
	name = strings.TrimLeft(name, "-")
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	if best := closest(name, names); best != "" {
		return fmt.Errorf("unknown flag --%s (did you mean --%s?)", name, best)
	}
	return fmt.Errorf("unknown flag --%s", name)
}

// interspersed returns the command line args (args[0] the program) with
// the flags given after a command's arguments moved before them, so that
// `spyder graph export out.jsonl --format dot` means what `spyder graph
// export --format dot out.jsonl` does: Go's flag parser stops at the first
// argument and would take the flags for file names. A flag's value goes
// with it; "--" ends the reordering, as does a line for shell completion.
func interspersed(cmds []*cli.Command, args []string) []string {
	if len(args) < 2 || args[len(args)-1] == "--generate-bash-completion" {
		return args
	}
	out := []string{args[0]}
	i := 1
	var cmd *cli.Command
	for ; i < len(args) && (cmd == nil || len(cmd.Subcommands) > 0); i++ {
		if strings.HasPrefix(args[i], "-") {
			out = append(out, args[i]) // the app's own flags: --help, --version
			continue
		}
		next := commandNamed(cmds, args[i])
		if next == nil {
			return args
		}
		out, cmd, cmds = append(out, args[i]), next, next.Subcommands
	}
	if cmd == nil {
		return args
	}
	var flags, pos []string
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i:]...)
			i = len(args)
		case a == "-" || !strings.HasPrefix(a, "-"):
			pos = append(pos, a)
		default:
			flags = append(flags, a)
			if !strings.Contains(a, "=") && takesValue(cmd.Flags, strings.TrimLeft(a, "-")) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		}
	}
	return append(append(out, flags...), pos...)
}

// commandNamed returns the command of cmds named (or aliased) name, or nil.
func commandNamed(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether the flag of flags named name takes a value
// (false for a flag it does not know).
func takesValue(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				df, ok := f.(cli.DocGenerationFlag)
				return ok && df.TakesValue()
			}
		}
	}
	return false
}
