package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
	"github.com/xrash/smetrics"
	"gopkg.in/yaml.v3"
)

// loadConfig applies the YAML file named by --config to the flags that
// neither the command line nor the environment set. One file serves every
// command (a fleet's file sets redis for the queue commands and concurrency
// for run), so a key that names a flag of another command that reads the
// file is left to that command; a key that names no such flag, or a value
// its flag cannot take, is an error naming the file and the key, not a
// setting silently ignored.
func loadConfig(c *cli.Context, flags []cli.Flag) error {
	path := c.String("config")
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, pathErr(err))
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
	values := make(map[any]any, len(doc))
	for _, k := range names {
		f, ok := own[k]
		if !ok {
			if !slices.Contains(all, k) {
				return usagef("config file %s: unknown key %q%s", path, k, suggestKey(k, all))
			}
			continue
		}
		n := doc[k]
		v, err := configValue(f, &n)
		if err != nil {
			return usagef("config file %s: line %d: %s: %v", path, n.Line, k, err)
		}
		values[k] = v
	}
	if err := altsrc.ApplyInputSourceValues(c, altsrc.NewMapInputSource(path, values), flags); err != nil {
		return usagef("config file %s: %v", path, err)
	}
	return nil
}

// configValue is the YAML value n as the type f's input source takes, or
// an error saying what f wants. Each is read from the value's text, so
// "db: 2026" is the file name 2026 and "host-timeout: 30" (no unit) is an
// error rather than 30 nanoseconds.
func configValue(f cli.Flag, n *yaml.Node) (any, error) {
	switch {
	case n.Kind == yaml.SequenceNode:
		return nil, errors.New("want one value, not a list (several go in one string, comma-separated)")
	case n.Kind != yaml.ScalarNode || n.Tag == "!!null":
		return nil, errors.New("want one value")
	}
	s := n.Value
	var v any
	var err error
	switch f.(type) {
	case *altsrc.StringFlag:
		return s, nil
	case *altsrc.IntFlag:
		v, err = strconv.Atoi(s)
	case *altsrc.Float64Flag:
		v, err = strconv.ParseFloat(s, 64)
	case *altsrc.DurationFlag:
		v, err = time.ParseDuration(s)
	case *altsrc.BoolFlag:
		var b bool
		err = n.Decode(&b)
		v = b
	default:
		return nil, fmt.Errorf("cannot be set from a file (%T)", f)
	}
	if err != nil {
		return nil, fmt.Errorf("want %s, got %q", flagWants(f), s)
	}
	return v, nil
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
	best, score := "", 0.0
	for _, k := range known {
		if s := smetrics.JaroWinkler(key, k, 0.7, 4); s > score {
			best, score = k, s
		}
	}
	if score < 0.85 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
