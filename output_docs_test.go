package spyder_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/spyder-crawler/spyder"
)

// TestOutputDocs_Fields fails when docs/output.md leaves out a JSON field
// of the output's types, a step status or an edge type, or names in its
// Fields table a field the types do not have: the page is the schema users
// read, and it follows the code.
func TestOutputDocs_Fields(t *testing.T) {
	data, err := os.ReadFile("docs/output.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "\n## Fields\n")
	if start < 0 {
		t.Fatal("docs/output.md has no ## Fields section")
	}
	table := text[start+1:]
	table = table[:strings.Index(table[1:], "\n## ")+1]
	documented := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| [^|]+ \\| ([^|]+) \\|")
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		for _, f := range regexp.MustCompile("`([a-z_0-9]+)`").FindAllStringSubmatch(m[1], -1) {
			documented[f[1]] = true
		}
	}
	fields := map[string]bool{}
	for _, v := range []any{spyder.Batch{}, spyder.DomainNode{}, spyder.IPNode{}, spyder.CertNode{},
		spyder.Edge{}, spyder.HostOutcome{}, spyder.StepOutcome{}, spyder.ResolverCounts{}, spyder.HostRecord{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "-" {
				continue // not written: a batch's host records go out as lines of their own
			}
			fields[name] = true
			if !documented[name] {
				t.Errorf("docs/output.md's Fields table leaves out %s.%s (%q)", typ.Name(), typ.Field(i).Name, name)
			}
		}
	}
	for name := range documented {
		if !fields[name] {
			t.Errorf("docs/output.md's Fields table names %q, which no output type has", name)
		}
	}
	words := append(append([]string{}, spyder.Statuses...), spyder.ResolvesTo, spyder.UsesNS, spyder.AliasOf,
		spyder.UsesMX, spyder.LinksTo, spyder.UsesCert, spyder.RedirectsTo, spyder.InAS,
		spyder.StepDNS, spyder.StepTLS, spyder.StepRobots, spyder.StepPage)
	for _, w := range words {
		if !strings.Contains(text, "`"+w+"`") {
			t.Errorf("docs/output.md does not name `%s`", w)
		}
	}
}
