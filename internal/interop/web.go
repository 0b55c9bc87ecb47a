package interop

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// nginxConf is an nginx configuration serving sites, each on its own address.
func nginxConf(dir string, sites []*Site) string {
	var b strings.Builder
	fmt.Fprintf(&b, "daemon off;\nworker_processes 1;\nuser root;\npid %s/nginx.pid;\nerror_log %s/nginx-error.log;\n", dir, dir)
	b.WriteString("events { worker_connections 256; }\nhttp {\n access_log off;\n gzip off;\n")
	for _, t := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, " %s_temp_path %s/nginx-%s;\n", t, dir, t)
	}
	for _, s := range sites {
		ssl := " ssl"
		if s.Plain {
			ssl = ""
		}
		fmt.Fprintf(&b, " server {\n  listen %s%s;\n  server_name %s;\n  root %s;\n", s.addr(), ssl, s.Host, filepath.Join(dir, "www", s.Host))
		fmt.Fprintf(&b, "  ssl_certificate %s;\n  ssl_certificate_key %s;\n", s.Leaf.ChainFile, s.Leaf.KeyFile)
		switch {
		case s.TLS10:
			b.WriteString("  ssl_protocols TLSv1;\n  ssl_ciphers DEFAULT:@SECLEVEL=0;\n")
		case s.TLS12:
			b.WriteString("  ssl_protocols TLSv1.2;\n")
		case s.TLS13:
			b.WriteString("  ssl_protocols TLSv1.3;\n")
		default:
			b.WriteString("  ssl_protocols TLSv1.2 TLSv1.3;\n")
		}
		if s.Groups != "" {
			fmt.Fprintf(&b, "  ssl_ecdh_curve %s;\n", s.Groups)
		}
		b.WriteString(s.Extra)
		nginxLocation(&b, "/robots.txt", "/robots.txt", s.Robots)
		page := "/"
		for i := range s.Chain {
			fmt.Fprintf(&b, "  location = %s {\n   return 302 /%d;\n  }\n", page, i+1)
			page = fmt.Sprintf("/%d", i+1)
		}
		nginxLocation(&b, page, "/index.html", s.Page)
		b.WriteString("  location / {\n   types { }\n   default_type text/html;\n  }\n }\n")
		if s.HTTP {
			fmt.Fprintf(&b, " server {\n  listen %s:80;\n  return 301 https://$host$request_uri;\n }\n", s.IP)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

func nginxLocation(b *strings.Builder, path, file string, r Resource) {
	fmt.Fprintf(b, "  location = %s {\n", path)
	switch {
	case r.Location != "":
		fmt.Fprintf(b, "   return %d %s;\n", r.status(), r.Location)
	case r.status() != 200:
		fmt.Fprintf(b, "   return %d;\n", r.status())
	default:
		fmt.Fprintf(b, "   types { }\n   default_type %q;\n", r.contentType())
		if r.Encoding != "" {
			fmt.Fprintf(b, "   add_header Content-Encoding %s;\n", r.Encoding)
		}
		fmt.Fprintf(b, "   try_files %s =404;\n", file)
	}
	b.WriteString("  }\n")
}

// apacheModules are the modules the Apache configuration loads.
var apacheModules = []string{"mpm_event", "authz_core", "mime", "headers", "ssl", "socache_shmcb", "rewrite", "dir", "alias", "include", "filter"}

// apacheConf is an Apache httpd configuration serving sites, each on its
// own address. Its workers run as www-data, as Debian's do.
func apacheConf(dir string, sites []*Site) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ServerRoot %s\nServerName localhost\nPidFile %s/apache.pid\nErrorLog %s/apache-error.log\nLogLevel warn\n", dir, dir, dir)
	fmt.Fprintf(&b, "DefaultRuntimeDir %s\nMutex file:%s default\nUser www-data\nGroup www-data\nTypesConfig /dev/null\n", dir, dir)
	for _, m := range apacheModules {
		fmt.Fprintf(&b, "LoadModule %s_module /usr/lib/apache2/modules/mod_%s.so\n", m, m)
	}
	b.WriteString("DirectoryIndex index.html\nSSLSessionCache none\n")
	for _, s := range sites {
		root := filepath.Join(dir, "www", s.Host)
		fmt.Fprintf(&b, "Listen %s https\n<VirtualHost %s>\n ServerName %s\n DocumentRoot %s\n", s.addr(), s.addr(), s.Host, root)
		fmt.Fprintf(&b, " SSLEngine on\n SSLCertificateFile %s\n SSLCertificateKeyFile %s\n", s.Leaf.ChainFile, s.Leaf.KeyFile)
		switch {
		case s.TLS12:
			b.WriteString(" SSLProtocol -all +TLSv1.2\n")
		case s.TLS13:
			b.WriteString(" SSLProtocol -all +TLSv1.3\n")
		default:
			b.WriteString(" SSLProtocol -all +TLSv1.2 +TLSv1.3\n")
		}
		if s.Groups != "" {
			fmt.Fprintf(&b, " SSLOpenSSLConfCmd Groups %s\n", s.Groups)
		}
		fmt.Fprintf(&b, " <Directory %s>\n  Require all granted\n", root)
		apacheFiles(&b, "robots.txt", s.Robots)
		apacheFiles(&b, "index.html", s.Page)
		b.WriteString(" </Directory>\n RewriteEngine on\n")
		apacheRewrite(&b, `^/robots\.txt$`, s.Robots)
		apacheRewrite(&b, `^/$`, s.Page)
		b.WriteString(s.Extra + "</VirtualHost>\n")
		if s.HTTP {
			fmt.Fprintf(&b, "Listen %s:80\n<VirtualHost %s:80>\n Redirect 301 / https://%s/\n</VirtualHost>\n", s.IP, s.IP, s.Host)
		}
	}
	return b.String()
}

func apacheFiles(b *strings.Builder, file string, r Resource) {
	fmt.Fprintf(b, "  <Files %q>\n", file)
	if t := r.contentType(); t != "" {
		fmt.Fprintf(b, "   ForceType %q\n", t)
	}
	if r.Encoding != "" {
		fmt.Fprintf(b, "   Header set Content-Encoding %s\n", r.Encoding)
	}
	b.WriteString("  </Files>\n")
}

func apacheRewrite(b *strings.Builder, pattern string, r Resource) {
	switch {
	case r.Location != "":
		fmt.Fprintf(b, " RewriteRule %s %s [R=%d,L]\n", pattern, r.Location, r.status())
	case r.status() == 403:
		fmt.Fprintf(b, " RewriteRule %s - [F]\n", pattern)
	case r.status() != 200:
		fmt.Fprintf(b, " RewriteRule %s - [R=%d,L]\n", pattern, r.status())
	}
}

// lighttpdConf is a lighttpd configuration serving sites, each on its own
// address. It serves 200s and redirects.
func lighttpdConf(dir string, sites []*Site) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server.modules = (\"mod_openssl\", \"mod_setenv\", \"mod_redirect\")\nserver.port = 443\nserver.bind = %q\n", sites[0].IP)
	fmt.Fprintf(&b, "server.document-root = %q\nserver.pid-file = \"%s/lighttpd.pid\"\nserver.errorlog = \"%s/lighttpd-error.log\"\n", dir, dir, dir)
	b.WriteString("index-file.names = (\"index.html\")\n")
	for _, s := range sites {
		fmt.Fprintf(&b, "$SERVER[\"socket\"] == \"%s\" {\n ssl.engine = \"enable\"\n", s.addr())
		fmt.Fprintf(&b, " ssl.pemfile = %q\n ssl.privkey = %q\n server.document-root = %q\n", s.Leaf.ChainFile, s.Leaf.KeyFile, filepath.Join(dir, "www", s.Host))
		conf := `"MinProtocol" => "TLSv1.2"`
		if s.TLS13 {
			conf = `"MinProtocol" => "TLSv1.3"`
		}
		if s.TLS12 {
			conf += `, "MaxProtocol" => "TLSv1.2"`
		}
		if s.Groups != "" {
			conf += fmt.Sprintf(`, "Groups" => %q`, s.Groups)
		}
		fmt.Fprintf(&b, " ssl.openssl.ssl-conf-cmd = (%s)\n", conf)
		if s.HTTP10 {
			b.WriteString(" server.protocol-http11 = \"disable\"\n")
		}
		lighttpdURL(&b, `^/robots\.txt$`, s.Robots)
		lighttpdURL(&b, `^/(index\.html)?$`, s.Page)
		b.WriteString("}\n")
	}
	return b.String()
}

func lighttpdURL(b *strings.Builder, pattern string, r Resource) {
	fmt.Fprintf(b, " $HTTP[\"url\"] =~ \"%s\" {\n", pattern)
	if r.Location != "" {
		fmt.Fprintf(b, "  url.redirect = (\"\" => %q)\n  url.redirect-code = %d\n", r.Location, r.status())
	} else {
		fmt.Fprintf(b, "  mimetype.assign = (\"\" => %q)\n", r.contentType())
		if r.Encoding != "" {
			fmt.Fprintf(b, "  setenv.set-response-header = (\"Content-Encoding\" => %q)\n", r.Encoding)
		}
	}
	b.WriteString(" }\n")
}

// haproxyConf is an HAProxy configuration answering for sites itself
// (http-request return and redirect), each on its own address.
func haproxyConf(dir string, sites []*Site) string {
	var b strings.Builder
	b.WriteString("global\n maxconn 256\ndefaults\n mode http\n timeout client 10s\n timeout connect 5s\n timeout server 10s\n")
	for _, s := range sites {
		opts := "ssl-min-ver TLSv1.2"
		if s.TLS13 {
			opts = "ssl-min-ver TLSv1.3"
		}
		if s.TLS12 {
			opts += " ssl-max-ver TLSv1.2"
		}
		if s.Groups != "" {
			opts += " curves " + s.Groups
		}
		if s.Plain {
			fmt.Fprintf(&b, "frontend %s\n bind %s:443\n", s.Host, s.IP)
		} else {
			fmt.Fprintf(&b, "frontend %s\n bind %s:443 ssl crt %s %s\n", s.Host, s.IP, s.Leaf.ChainFile, opts)
		}
		b.WriteString(s.Extra)
		root := filepath.Join(dir, "www", s.Host)
		haproxyRule(&b, "/robots.txt", filepath.Join(root, "robots.txt"), s.Robots)
		if s.EarlyHint {
			b.WriteString(" http-request early-hint Link \"</style.css>; rel=preload; as=style\" if { path / }\n")
		}
		page := "/"
		for i := range s.Chain {
			fmt.Fprintf(&b, " http-request redirect location /%d code 302 if { path %s }\n", i+1, page)
			page = fmt.Sprintf("/%d", i+1)
		}
		haproxyRule(&b, page, filepath.Join(root, "index.html"), s.Page)
		b.WriteString(" http-request return status 404\n")
	}
	return b.String()
}

func haproxyRule(b *strings.Builder, path, file string, r Resource) {
	cond := fmt.Sprintf("if { path %s }", path)
	switch {
	case r.Location != "":
		fmt.Fprintf(b, " http-request redirect location %s code %d %s\n", r.Location, r.status(), cond)
	case r.status() == CloseStatus:
		fmt.Fprintf(b, " http-request reject %s\n", cond)
	case r.status() != 200:
		fmt.Fprintf(b, " http-request return status %d %s\n", r.status(), cond)
	default:
		hdr := ""
		if r.Encoding != "" {
			hdr = " hdr Content-Encoding " + r.Encoding
		}
		fmt.Fprintf(b, " http-request return status 200 content-type %q file %s%s %s\n", r.contentType(), file, hdr, cond)
	}
}

// StartWeb writes each server's configuration and the sites' files under
// dir and starts the servers the sites name, ready when every site's
// address accepts connections.
func StartWeb(tb testing.TB, dir string, sites []*Site) {
	tb.Helper()
	by := map[string][]*Site{}
	for _, s := range sites {
		s.files(tb, dir)
		by[s.Server] = append(by[s.Server], s)
	}
	for server, ss := range by {
		var ready []string
		for _, s := range ss {
			ready = append(ready, s.addr())
		}
		switch server {
		case "nginx":
			conf := writeFile(tb, dir, "nginx.conf", []byte(nginxConf(dir, ss)))
			Start(tb, dir, server, ready, "nginx", "-c", conf, "-p", dir)
		case "apache":
			conf := writeFile(tb, dir, "apache.conf", []byte(apacheConf(dir, ss)))
			Start(tb, dir, server, ready, "apache2", "-f", conf, "-DFOREGROUND")
		case "lighttpd":
			conf := writeFile(tb, dir, "lighttpd.conf", []byte(lighttpdConf(dir, ss)))
			Start(tb, dir, server, ready, "lighttpd", "-D", "-f", conf)
		case "haproxy":
			conf := writeFile(tb, dir, "haproxy.cfg", []byte(haproxyConf(dir, ss)))
			Start(tb, dir, server, ready, "haproxy", "-db", "-f", conf)
		case "caddy":
			conf := writeFile(tb, dir, "Caddyfile", []byte(caddyConf(dir, ss)))
			Start(tb, dir, server, ready, "caddy", "run", "--config", conf, "--adapter", "caddyfile")
		case "h2o":
			conf := writeFile(tb, dir, "h2o.conf", []byte(h2oConf(dir, ss)))
			Start(tb, dir, server, ready, "h2o", "-c", conf)
		case "openssl":
			for _, s := range ss {
				startSServer(tb, dir, s)
			}
		default:
			tb.Fatalf("interop: unknown server %q", server)
		}
	}
}
