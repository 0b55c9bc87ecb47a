package errtext

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

func TestPath(t *testing.T) {
	_, err := os.Open(filepath.Join(t.TempDir(), "missing"))
	if got := Path(err); !errors.Is(got, os.ErrNotExist) || got.Error() != "no such file or directory" {
		t.Errorf("Path(%v) = %v; want the bare cause", err, got)
	}
	other := errors.New("plain")
	if got := Path(other); got != other {
		t.Errorf("Path(plain) = %v; want it unchanged", got)
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 4, "abcd…"},
		{"ééé", 3, "é…"}, // é is two bytes: the cut backs off to a whole rune
	} {
		got := Clip(c.in, c.n)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q; want %q", c.in, c.n, got, c.want)
		}
	}
}
