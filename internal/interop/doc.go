// Package interop is the interop world: real server software from Debian
// (nginx, Apache, lighttpd and HAProxy for HTTPS; BIND, NSD, Knot and
// PowerDNS serving zones, Unbound recursing over them) started by the tests
// with configurations they write, on loopback addresses the test owns, with
// certificates from a private CA. The world knows the edges a correct crawl
// of it finds; its test crawls it and fails on any edge missed or invented.
//
// Every server runs as a process of its own in a process group of its own,
// killed when the test ends. Nothing leaves the machine: the resolver's
// root hints name the world's own root server, and every address is in
// 127.0.0.0/8.
//
// The package is a test harness and nothing in the product imports it.
package interop
