package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
	"github.com/xrash/smetrics"
	"gopkg.in/yaml.v3"
)

// loadConfig applies the YAML file named by --config to the flags that
// neither the command line nor the environment set. One file serves every
// command (a fleet's file sets redis for the queue commands and concurrency
// for run), so a key that names a flag of another command that reads the
// file is left to that command; a key that names no such flag is an error
// naming the key and the file, not a setting silently ignored.
func loadConfig(c *cli.Context, flags []cli.Flag) error {
	path := c.String("config")
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, pathErr(err))
	}
	var keys map[string]any
	if err := yaml.Unmarshal(data, &keys); err != nil {
		return usagef("config file %s: %s", path, strings.Join(strings.Fields(err.Error()), " "))
	}
	own, all := configKeys(flags), commandKeys(c.App.Commands)
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	values := make(map[any]any, len(keys))
	for _, k := range names {
		switch {
		case slices.Contains(own, k):
			values[k] = keys[k]
		case !slices.Contains(all, k):
			return usagef("config file %s: unknown key %q%s", path, k, suggestKey(k, all))
		}
	}
	floatsAsFloats(values, flags)
	if err := altsrc.ApplyInputSourceValues(c, altsrc.NewMapInputSource(path, values), flags); err != nil {
		return usagef("config file %s: %v", path, err)
	}
	return nil
}

// commandKeys are the config keys of every command in cmds and their
// subcommands that reads a config file.
func commandKeys(cmds []*cli.Command) []string {
	var keys []string
	for _, cmd := range cmds {
		keys = append(keys, configKeys(cmd.Flags)...)
		keys = append(keys, commandKeys(cmd.Subcommands)...)
	}
	return keys
}

// floatsAsFloats turns the whole numbers YAML gives for float flags
// (rate: 5) into the float64 the flags' input source requires.
func floatsAsFloats(values map[any]any, flags []cli.Flag) {
	for _, f := range flags {
		if _, ok := f.(*altsrc.Float64Flag); !ok {
			continue
		}
		for _, name := range f.Names() {
			switch v := values[name].(type) {
			case int:
				values[name] = float64(v)
			case uint64:
				values[name] = float64(v)
			}
		}
	}
}

// configKeys are the keys a config file may hold: the names of the visible
// flags that read it (not --config itself, nor the hidden test flags).
func configKeys(flags []cli.Flag) []string {
	var keys []string
	for _, f := range flags {
		_, readsFile := f.(altsrc.FlagInputSourceExtension)
		if vf, ok := f.(cli.VisibleFlag); readsFile && ok && vf.IsVisible() {
			keys = append(keys, f.Names()...)
		}
	}
	return keys
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
