package layout

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/spyder-crawler/spyder/internal/docstest"
)

// maxReadmeLines keeps README.md a front door: what spyder is, install,
// a first crawl, a fleet, the output at a glance and links to docs/.
const maxReadmeLines = 300

// TestDocs_ReadmeIsShort fails when README.md grows past maxReadmeLines, or
// leaves out a link to a page of docs/.
func TestDocs_ReadmeIsShort(t *testing.T) {
	pages := docstest.Pages(t, root)
	readme := pages["README.md"]
	if n := strings.Count(readme, "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines; keep it to %d and move the rest into docs/", n, maxReadmeLines)
	}
	for page := range pages {
		if page != "README.md" && !strings.Contains(readme, "]("+page) {
			t.Errorf("README.md does not link to %s", page)
		}
	}
}

// outsideCode returns text with its fenced code blocks and code spans
// blanked, so that neither a `#` comment nor a `[x](y)` in code is read as
// a heading or a link. Lines keep their numbers.
func outsideCode(text string) string {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
		} else if in {
			lines[i] = ""
		}
	}
	return regexp.MustCompile("`[^`\n]*`").ReplaceAllString(strings.Join(lines, "\n"), "``")
}

// anchors returns the anchors GitHub gives the headings of text: lower
// case, punctuation dropped, spaces as hyphens, and -1, -2… after a
// repeated one. Code spans in a heading keep their text.
func anchors(text string) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	in := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
		}
		h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " ")
		if in || !strings.HasPrefix(l, "#") || !ok {
			continue
		}
		slug := strings.Map(func(r rune) rune {
			switch {
			case r == ' ':
				return '-'
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				return unicode.ToLower(r)
			}
			return -1
		}, strings.TrimSpace(h))
		if n := seen[slug]; n > 0 {
			set[slug+"-"+strconv.Itoa(n)] = true
		} else {
			set[slug] = true
		}
		seen[slug]++
	}
	return set
}

// TestDocs_LinksResolve fails when a link in README.md or docs/ names a
// file that does not exist or an anchor that no
// heading of its page makes.
func TestDocs_LinksResolve(t *testing.T) {
	pages := docstest.Pages(t, root)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for page, text := range pages {
		for i, line := range strings.Split(outsideCode(text), "\n") {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.ToSlash(filepath.Join(filepath.Dir(page), file))
				}
				where := page + ":" + strconv.Itoa(i+1)
				text, ok := pages[path]
				if !ok {
					if _, err := os.Stat(filepath.Join(root, path)); err != nil {
						t.Errorf("%s: link to %s: no such file", where, target)
						continue
					}
				}
				if anchor != "" && (!ok || !anchors(text)[anchor]) {
					t.Errorf("%s: link to %s: %s has no heading with the anchor #%s", where, target, path, anchor)
				}
			}
		}
	}
	if checked < 30 {
		t.Errorf("checked %d links; the parser has gone wrong", checked)
	}
}
