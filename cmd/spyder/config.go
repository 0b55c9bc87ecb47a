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
// neither the command line nor the environment set. Every key of the file
// must name a flag the file can set: a typo is an error naming the key and
// the file, not a setting silently ignored.
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
	known := configKeys(flags)
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if !slices.Contains(known, k) {
			return usagef("config file %s: unknown key %q%s", path, k, suggestKey(k, known))
		}
	}
	src, err := altsrc.NewYamlSourceFromFile(path)
	if err != nil {
		return usagef("config file %s: %v", path, err)
	}
	if err := altsrc.ApplyInputSourceValues(c, src, flags); err != nil {
		return usagef("config file %s: %v", path, err)
	}
	return nil
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
