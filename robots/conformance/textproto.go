package main

import (
	"fmt"
	"strconv"
	"strings"
)

// message is a protocol buffer message read from its text format: each
// field name with its values in the order written. A value is a string
// (adjacent literals joined), a bare word (an enum name or number) or a
// nested message.
type message map[string][]value

type value struct {
	text string  // a string's bytes, or the bare word
	msg  message // a nested message; nil otherwise
}

// str returns the text of field name's first value, "" when it has none.
func (m message) str(name string) string {
	if v := m[name]; len(v) > 0 {
		return v[0].text
	}
	return ""
}

// parseText reads the text format of one message: fields "name: value",
// "name { ... }" or "name: [v1, v2]", separated by white space, commas or
// semicolons, with '#' comments. It reads only what the robots.txt
// conformance files use, not extensions or Any.
func parseText(src string) (message, error) {
	p := &textParser{src: src}
	m, err := p.fields(0)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", p.line(), err)
	}
	return m, nil
}

type textParser struct {
	src string
	pos int
}

func (p *textParser) line() int { return 1 + strings.Count(p.src[:p.pos], "\n") }

// skip passes white space and comments.
func (p *textParser) skip() {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end.
func (p *textParser) peek() byte {
	p.skip()
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

// fields reads fields until the closing byte end (0: the end of input).
func (p *textParser) fields(end byte) (message, error) {
	m := message{}
	for {
		switch c := p.peek(); {
		case c == end:
			if end != 0 {
				p.pos++
			}
			return m, nil
		case c == 0:
			return nil, fmt.Errorf("missing %q", end)
		case c == ',' || c == ';':
			p.pos++
			continue
		}
		name := p.word()
		if name == "" {
			return nil, fmt.Errorf("want a field name, got %q", p.src[p.pos])
		}
		if p.peek() == ':' {
			p.pos++
		}
		vals, err := p.values()
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", name, err)
		}
		m[name] = append(m[name], vals...)
	}
}

// values reads one value or a bracketed list of them.
func (p *textParser) values() ([]value, error) {
	if p.peek() != '[' {
		v, err := p.value()
		return []value{v}, err
	}
	p.pos++
	var out []value
	for {
		switch p.peek() {
		case ']':
			p.pos++
			return out, nil
		case ',':
			p.pos++
			continue
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

func (p *textParser) value() (value, error) {
	switch c := p.peek(); c {
	case '{', '<':
		p.pos++
		end := byte('}')
		if c == '<' {
			end = '>'
		}
		m, err := p.fields(end)
		return value{msg: m}, err
	case '"', '\'':
		var b strings.Builder
		for c := p.peek(); c == '"' || c == '\''; c = p.peek() {
			if err := p.quoted(&b); err != nil {
				return value{}, err
			}
		}
		return value{text: b.String()}, nil
	}
	w := p.word()
	if w == "" {
		return value{}, fmt.Errorf("want a value")
	}
	return value{text: w}, nil
}

// word reads a run of letters, digits, '_', '.', '-' and '+'.
func (p *textParser) word() string {
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.-+", c) >= 0) {
			break
		}
		p.pos++
	}
	return p.src[start:p.pos]
}

// quoted reads one string literal with C escapes (\n, \", \xHH, \NNN, ...)
// into b; the bytes are taken as written, not checked for UTF-8.
func (p *textParser) quoted(b *strings.Builder) error {
	q := p.src[p.pos]
	p.pos++
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == q:
			p.pos++
			return nil
		case c == '\n':
			return fmt.Errorf("string not closed on its line")
		case c != '\\':
			b.WriteByte(c)
			p.pos++
			continue
		}
		n, err := p.escape(b)
		if err != nil {
			return err
		}
		p.pos += n
	}
	return fmt.Errorf("string not closed")
}

// escape writes the escape at p.pos (a backslash) to b and returns its length.
func (p *textParser) escape(b *strings.Builder) (int, error) {
	rest := p.src[p.pos+1:]
	if rest == "" {
		return 0, fmt.Errorf("string ends in a backslash")
	}
	if simple := strings.IndexByte(`ntr"'\?abfv`, rest[0]); simple >= 0 {
		b.WriteByte("\n\t\r\"'\\?\a\b\f\v"[simple])
		return 2, nil
	}
	digits, base := 0, 8
	switch {
	case rest[0] == 'x' || rest[0] == 'X':
		rest, base = rest[1:], 16
		for digits < 2 && digits < len(rest) && isDigit(rest[digits], 16) {
			digits++
		}
	default:
		for digits < 3 && digits < len(rest) && isDigit(rest[digits], 8) {
			digits++
		}
	}
	if digits == 0 {
		return 0, fmt.Errorf("bad escape \\%c", rest[0])
	}
	n, _ := strconv.ParseUint(rest[:digits], base, 8)
	b.WriteByte(byte(n))
	if base == 16 {
		return 2 + digits, nil
	}
	return 1 + digits, nil
}

func isDigit(c byte, base int) bool {
	if base == 8 {
		return c >= '0' && c <= '7'
	}
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
