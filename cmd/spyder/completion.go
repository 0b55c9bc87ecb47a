package main

import (
	"embed"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// completionScripts are the bash, zsh and fish scripts; each asks the
// binary (its hidden --generate-bash-completion flag, answered by
// [completeArgs]) what may come next, so they follow the commands and flags
// of whichever spyder is installed.
//
//go:embed completion/spyder.bash completion/spyder.zsh completion/spyder.fish
var completionScripts embed.FS

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "bash:  source <(spyder completion bash)   (or save it in /etc/bash_completion.d/spyder)\n" +
			"zsh:   source <(spyder completion zsh)    (or save it as _spyder in a directory of $fpath)\n" +
			"fish:  spyder completion fish > ~/.config/fish/completions/spyder.fish",
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("completion takes one shell: bash, zsh or fish")
			}
			return writeCompletion(c.App, c.Args().First(), c.App.Writer)
		},
	}
}

// writeCompletion writes the completion script for shell to w.
func writeCompletion(app *cli.App, shell string, w io.Writer) error {
	switch shell {
	case "bash", "zsh", "fish":
	default:
		return usagef("completion %q: want bash, zsh or fish", shell)
	}
	script, err := completionScripts.ReadFile("completion/spyder." + shell)
	if err != nil {
		return err
	}
	_, err = w.Write(script)
	return err
}

// withCompletion makes cmd and every command under it answer
// --generate-bash-completion with [completeArgs].
func withCompletion(cmds []*cli.Command) []*cli.Command {
	for _, cmd := range cmds {
		cmd.BashComplete = completeArgs
		withCompletion(cmd.Subcommands)
	}
	return cmds
}

// completeArgs prints, one per line, what may stand in the word being
// completed: the command's visible flags when it starts with "-" (those it
// begins), nothing after a flag that takes a value (the shells then offer
// file names), else the command's visible subcommands. Hidden flags and
// aliases are left out. The scripts pass every word up to the cursor, the
// one being completed last (maybe ""), before the completion flag; cli
// leaves them unparsed, so they are read from os.Args.
func completeArgs(c *cli.Context) {
	cur, prev := "", ""
	if n := len(os.Args); n >= 3 {
		cur, prev = os.Args[n-2], os.Args[n-3]
	}
	var flags []cli.Flag
	var cmds []*cli.Command
	if c.Command != nil && c.Command.Name != "" {
		flags, cmds = c.Command.VisibleFlags(), c.Command.VisibleCommands()
	} else {
		flags, cmds = c.App.VisibleFlags(), c.App.VisibleCommands()
	}
	if strings.HasPrefix(cur, "-") {
		for _, f := range flags {
			for _, name := range f.Names() {
				if len(name) > 1 && strings.HasPrefix("--"+name, cur) {
					fmt.Fprintln(c.App.Writer, "--"+name)
				}
			}
		}
		return
	}
	for _, f := range flags {
		if df, ok := f.(cli.DocGenerationFlag); ok && df.TakesValue() && slices.Contains(f.Names(), strings.TrimLeft(prev, "-")) {
			return
		}
	}
	for _, cmd := range cmds {
		fmt.Fprintln(c.App.Writer, cmd.Name)
	}
}

func manCommand() *cli.Command {
	return &cli.Command{
		Name:         "man",
		Usage:        "print the manual page (roff), made from the commands and flags of this binary",
		Description:  "spyder man > spyder.1 && man -l spyder.1",
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("man takes no arguments")
			}
			page, err := c.App.ToManWithSection(1)
			if err != nil {
				return fmt.Errorf("man page: %w", err)
			}
			_, err = io.WriteString(c.App.Writer, page)
			return err
		},
	}
}
