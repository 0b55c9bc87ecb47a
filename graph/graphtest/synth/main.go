// Command synth writes a synthetic crawl in spyder's output schema to
// stdout, for measuring `spyder graph` on a crawl of any size:
//
//	go run ./graph/graphtest/synth -hosts 1000000 > crawl.jsonl
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spyder-crawler/spyder/graph/graphtest"
)

func main() {
	var o graphtest.Options
	flag.IntVar(&o.Hosts, "hosts", 1000, "probed hosts")
	flag.IntVar(&o.BatchSize, "batch", 64, "hosts per batch line")
	flag.BoolVar(&o.Edges, "edges", false, "write the edges format instead of batches")
	flag.StringVar(&o.Run, "run", "default", "run_id")
	flag.IntVar(&o.Start, "start", 0, "number of the first host")
	flag.Parse()
	if err := graphtest.Write(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
}
