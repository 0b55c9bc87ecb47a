package redisstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"spyder/queue"
	"spyder/store/redisstore"
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

	res, err := q.Seed(ctx, []string{"example.com", "Example.COM.", "not a host"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Added, res.Duplicate, len(res.Rejected))

	ls, err := q.Lease(ctx, 1, queue.DefaultLeaseTTL, 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range ls {
		// ... probe l.Item.Host, hand the results to the sink, then:
		if err := q.Ack(ctx, l); err != nil {
			log.Print(err) // queue.ErrLeaseLost: it expired and someone else has it
		}
	}
}
