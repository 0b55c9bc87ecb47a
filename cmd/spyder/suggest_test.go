package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestInterspersed: flags after a command's arguments move before them,
// each with its value; bool flags take none; "--" and shell completion
// stop the reordering; a group's words are walked to the command.
func TestInterspersed(t *testing.T) {
	cmds := newApp(nil, nil).Commands
	tests := []struct{ in, want string }{
		{"spyder graph export out.jsonl --format dot", "spyder graph export --format dot out.jsonl"},
		{"spyder graph summary a.jsonl --json b.jsonl --top=3", "spyder graph summary --json --top=3 a.jsonl b.jsonl"},
		{"spyder queue seed list.txt --db x.db -", "spyder queue seed --db x.db list.txt -"},
		{"spyder graph summary a.jsonl -- --odd", "spyder graph summary a.jsonl -- --odd"},
		{"spyder run --db x.db", "spyder run --db x.db"},
		{"spyder rn a --db x", "spyder rn a --db x"},
		{"spyder graph export a --format --generate-bash-completion", "spyder graph export a --format --generate-bash-completion"},
	}
	for _, tt := range tests {
		got := strings.Join(interspersed(cmds, strings.Fields(tt.in)), " ")
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("interspersed(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestClosest: a likely typo gets its word; nothing close gets none.
func TestClosest(t *testing.T) {
	known := []string{"run", "queue", "graph", "version", "concurrency", "continuous"}
	for in, want := range map[string]string{"rn": "run", "verson": "version", "concurency": "concurrency", "qeueu": "queue", "xyz": ""} {
		if got := closest(in, known); got != want {
			t.Errorf("closest(%q) = %q, want %q", in, got, want)
		}
	}
}
