package main

import (
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"
)

// TestComposeFile_UsesRealFlags reads compose.yaml with a YAML parser and
// checks that every spyder service runs a command the binary has, with
// flags that command has, and that its SPYDER_ variables name such flags.
func TestComposeFile_UsesRealFlags(t *testing.T) {
	data, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	root := &cli.Command{Subcommands: newApp(nil, nil).Commands}
	probes := 0
	for name, svc := range file.Services {
		if !strings.Contains(svc.Image, "spyder") {
			continue
		}
		var path []string
		for _, a := range svc.Command {
			if strings.HasPrefix(a, "-") {
				break
			}
			path = append(path, a)
		}
		cmd := findCommand(root, path)
		if cmd == nil || len(path) == 0 {
			t.Errorf("service %s runs %q: no such spyder command", name, svc.Command)
			continue
		}
		if path[0] == "run" {
			probes++
		}
		for _, a := range svc.Command[len(path):] {
			if flag, ok := strings.CutPrefix(a, "--"); ok {
				if flag, _, _ = strings.Cut(flag, "="); !hasFlag(cmd, flag) {
					t.Errorf("service %s: spyder %s has no flag --%s", name, strings.Join(path, " "), flag)
				}
			}
		}
		for env := range svc.Environment {
			if !envNamesFlag(cmd, env) {
				t.Errorf("service %s: %s is read by no flag of spyder %s", name, env, strings.Join(path, " "))
			}
		}
	}
	if probes != 3 {
		t.Errorf("compose.yaml runs %d probes, want 3", probes)
	}
	if _, ok := file.Services["redis"]; !ok {
		t.Error("compose.yaml has no redis service")
	}
}

func envNamesFlag(c *cli.Command, env string) bool {
	for _, f := range c.Flags {
		if df, ok := f.(cli.DocGenerationFlag); ok {
			for _, e := range df.GetEnvVars() {
				if e == env {
					return true
				}
			}
		}
	}
	return false
}
