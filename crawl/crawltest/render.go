package crawltest

import (
	"fmt"
	"html"
	"strings"
)

// bodyCap is the contract's default body cap; big pages put links on both
// sides of it, well away from the boundary.
const bodyCap = 512 << 10

// renderLink writes l as HTML; malformed pages use upper case, unquoted
// values and unclosed elements.
func renderLink(b *strings.Builder, l link, malformed bool, i int) {
	v := html.EscapeString(l.val)
	attr := fmt.Sprintf(`%s="%s"`, l.attr, v)
	tag := l.tag
	if malformed {
		switch i % 3 {
		case 0:
			tag, attr = strings.ToUpper(tag), fmt.Sprintf("%s='%s'", strings.ToUpper(l.attr), v)
		case 1:
			attr = l.attr + "=" + v
		}
	}
	switch l.tag {
	case "a":
		if malformed && i%2 == 0 {
			fmt.Fprintf(b, "<li><%s %s>link %d\n", tag, attr, i) // never closed
		} else {
			fmt.Fprintf(b, "<li><%s %s>link %d</%s></li>\n", tag, attr, i, tag)
		}
	case "link":
		fmt.Fprintf(b, "<%s rel=\"stylesheet\" %s>\n", tag, attr)
	case "script", "iframe":
		fmt.Fprintf(b, "<%s %s></%s>\n", tag, attr, tag)
	case "img":
		fmt.Fprintf(b, "<%s %s alt=\"\">\n", tag, attr)
	case "source":
		fmt.Fprintf(b, "<video controls><%s %s type=\"video/mp4\"></video>\n", tag, attr)
	}
}

// page renders s's HTML page: links before the cap, and for big pages
// padding past the cap and more links that must not count.
func (s *site) pageBody() string {
	var b strings.Builder
	malformed := s.page == pageMalformed
	if malformed {
		b.WriteString("<HTML><head><title>" + s.host + "</title>\n")
	} else if s.page == pageXHTML {
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
			`<html xmlns="http://www.w3.org/1999/xhtml"><head><title>` + s.host + "</title>\n")
	} else {
		b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + s.host + "</title>\n")
	}
	if s.base != "" {
		fmt.Fprintf(&b, "<base href=\"%s\">\n", html.EscapeString(s.base))
	}
	b.WriteString("</head>\n<body>\n<h1>Welcome to " + s.host + "</h1>\n<ul>\n")
	if malformed {
		b.WriteString("<div><b><i>nested wrongly</b></i></span>\n<table><tr><td>cell\n")
	}
	for i, l := range s.links {
		renderLink(&b, l, malformed, i)
		if i == len(s.links)/2 {
			for _, d := range s.decoys {
				b.WriteString(d + "\n")
			}
			if s.base != "" {
				b.WriteString("<base href=\"https://second-base.example-ignored.com/\">\n")
			}
		}
	}
	if !malformed {
		b.WriteString("</ul>\n")
	}
	if s.page == pageBig {
		line := "<p>" + strings.Repeat("filler text to push the rest of this page past the body cap. ", 3) + "</p>\n"
		for b.Len() < bodyCap+96<<10 {
			b.WriteString(line)
		}
		b.WriteString("<ul>\n")
		for i, l := range s.beyond {
			renderLink(&b, l, false, i)
		}
		b.WriteString("</ul>\n")
	}
	if !malformed {
		b.WriteString("</body></html>\n")
	}
	return b.String()
}

// otherBody is the body of a non-page answer: it still mentions URLs (of
// the page's own links), which must not count since it is not parsed.
func (s *site) otherBody(rt route) []byte {
	var urls []string
	for _, l := range s.links {
		urls = append(urls, l.val)
	}
	switch {
	case rt.location != "":
		return []byte(fmt.Sprintf("<html><body>Moved to <a href=\"%s\">here</a>. <a href=\"https://redirect-body-%d.example.com/\">x</a></body></html>\n",
			html.EscapeString(rt.location), s.seed%1000))
	case rt.ctype == "application/json":
		return []byte(fmt.Sprintf("{\"links\": %q, \"html\": \"<a href=\\\"https://json-%d.example.com/\\\">x</a>\"}\n", urls, s.seed%1000))
	case strings.HasPrefix(rt.ctype, "text/plain"):
		return []byte(s.pageBody())
	case rt.ctype == "image/png":
		return []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR<a href=\"https://png-link.example.com/\">")
	default: // error pages
		return []byte(fmt.Sprintf("<!DOCTYPE html><html><body><h1>Error %d</h1><a href=\"https://status-%d.example.com/\">status page</a></body></html>\n",
			rt.status, s.seed%1000))
	}
}
