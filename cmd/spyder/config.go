package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
	"gopkg.in/yaml.v3"

	"github.com/spyder-crawler/spyder/internal/errtext"
)

// loadConfig applies the YAML file named by --config to the flags that
// neither the command line nor the environment set, each value parsed by
// its flag as the command line's would be. One file serves every command
// (a fleet's file sets redis for the queue commands and concurrency for
// run), so a key that names a flag of another command that reads the file
// is left to that command; a key that names no such flag, or a value its
// flag cannot take, is an error naming the file and the key, not a
// setting silently ignored.
func loadConfig(c *cli.Context, flags []cli.Flag) error {
	path := c.String("config")
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, errtext.Path(err))
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return usagef("config file %s: %s", path, strings.Join(strings.Fields(err.Error()), " "))
	}
	own, all := configFlags(flags), commandKeys(c.App.Commands)
	names := make([]string, 0, len(doc))
	for k := range doc {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		f, ok := own[k]
		if !ok {
			if !slices.Contains(all, k) {
				return usagef("config file %s: unknown key %q%s", path, k, suggestKey(k, all))
			}
			continue
		}
		n := doc[k]
		if err := setFromConfig(c, f, k, &n); err != nil {
			return usagef("config file %s: line %d: %s: %v", path, n.Line, k, err)
		}
	}
	return nil
}

// setFromConfig sets flag f (named k) to the YAML value n, as written, unless
// the command line or the environment set it (IsSet tells both). The text
// is what the flag parses, so "db: 0700" is the file 0700 and
// "host-timeout: 30" (no unit) is an error, as on the command line.
func setFromConfig(c *cli.Context, f cli.Flag, k string, n *yaml.Node) error {
	switch {
	case n.Kind == yaml.SequenceNode:
		return errors.New("want one value, not a list (several go in one string, comma-separated)")
	case n.Kind != yaml.ScalarNode || n.Tag == "!!null":
		return errors.New("want one value")
	case c.IsSet(k):
		return nil
	}
	if err := c.Set(k, n.Value); err != nil {
		return fmt.Errorf("want %s, got %q", flagWants(f), n.Value)
	}
	return nil
}

// configFlags are the flags a config file may set, under each of their
// names: the visible flags that read it (not --config itself, nor the
// hidden test flags).
func configFlags(flags []cli.Flag) map[string]cli.Flag {
	m := make(map[string]cli.Flag)
	for _, f := range flags {
		_, readsFile := f.(altsrc.FlagInputSourceExtension)
		if vf, ok := f.(cli.VisibleFlag); readsFile && ok && vf.IsVisible() {
			for _, name := range f.Names() {
				m[name] = f
			}
		}
	}
	return m
}

// commandKeys are the config keys of every command in cmds and their
// subcommands that reads a config file. The walk skips urfave/cli's help
// commands, whose subcommands lead back to themselves.
func commandKeys(cmds []*cli.Command) []string {
	var keys []string
	for _, cmd := range cmds {
		if cmd.Name == "help" {
			continue
		}
		for k := range configFlags(cmd.Flags) {
			keys = append(keys, k)
		}
		keys = append(keys, commandKeys(cmd.Subcommands)...)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// suggestKey returns ` (did you mean "x"?)` for the known key closest to
// key, or "" when none is close enough to be a likely typo.
func suggestKey(key string, known []string) string {
	if best := closest(key, known); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}
