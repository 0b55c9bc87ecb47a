package crawl_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/host"
)

func TestCrawler_CheckResolver(t *testing.T) {
	w := crawltest.Start(t, crawltest.Options{Hosts: 5, Seed: 45})
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	newCrawler := func(resolver string) *crawl.Crawler {
		c, err := crawl.New(crawl.Config{Resolver: resolver, RootCAs: w.RootCAs, Dial: w.Dial,
			DNSTimeout: 200 * time.Millisecond, DNSRetries: 1})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	known := host.Name(w.Seeds[0])
	working, dead := newCrawler(w.Resolver), newCrawler(silent.LocalAddr().String())
	for _, name := range []host.Name{known, "no-such-name-anywhere.com", ""} {
		if err := working.CheckResolver(t.Context(), name); err != nil {
			t.Errorf("CheckResolver(%q) on the world's resolver = %v, want nil", name, err)
		}
	}
	for _, name := range []host.Name{known, ""} {
		err := dead.CheckResolver(t.Context(), name)
		if err == nil || !strings.Contains(err.Error(), silent.LocalAddr().String()) || !strings.Contains(err.Error(), "does not answer") {
			t.Errorf("CheckResolver(%q) on a silent resolver = %v, want an error naming it", name, err)
		}
	}
}
