// Package errtext shapes the text of the messages spyder shows a user, so
// that each names its input once and stays one readable line.
package errtext

import (
	"errors"
	"os"
)

// Path returns the cause of an *os.PathError without its path, for a
// message that names the path itself ("--out x.jsonl: permission denied"
// rather than the path twice); other errors come back as they are.
func Path(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Clip returns s cut to at most n bytes, with an ellipsis when cut, so a
// hostile input cannot fill a log line. It never splits a UTF-8 sequence.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// utf8RuneStart reports whether b can begin a UTF-8 sequence.
func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
