package redisstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/redisstore"
)

// A worker's life against the fleet queue: connect, open, seed, lease, ack.
// (Not run: it needs a Redis server at localhost:6379.)
func Example() {
	ctx := context.Background()
	c, err := redisstore.NewClient("redis://localhost:6379/0")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		log.Fatal(err)
	}
	q, err := redisstore.Open(ctx, c, redisstore.Options{Key: "{spyder}:queue"})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()

	// Seed takes parsed host names: parse what the user gave first.
	var hosts []host.Name
	for _, in := range []string{"example.com", "Example.COM.", "not a host"} {
		h, err := host.Parse(in)
		if err != nil {
			log.Print(err) // host.ErrInvalid
			continue
		}
		hosts = append(hosts, h)
	}
	res, err := q.Seed(ctx, hosts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Added, res.Duplicate)

	ls, err := q.Lease(ctx, 1, queue.DefaultLeaseTTL, 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	// ... probe each l.Item.Host and hand the results to the sink, then ack
	// them all in one call that also keeps each host's last probe:
	ps := make([]queue.Visit, len(ls))
	for i, l := range ls {
		ps[i] = queue.Visit{Host: l.Item.Host, At: time.Now().Unix(), Outcome: "ok"}
	}
	ok, err := q.AckAll(ctx, ls, ps)
	if err != nil {
		log.Fatal(err)
	}
	for i, l := range ls {
		if !ok[i] {
			log.Printf("%s: lease lost: it expired and someone else has it", l.Item.Host)
		}
	}
}
