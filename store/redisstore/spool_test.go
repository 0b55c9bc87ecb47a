package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"spyder/store/redisstore"
	"spyder/store/redisstore/redistest"
)

// TestSpool_FIFO checks that entries come back oldest first, byte for byte,
// from any client of the server, and leave only when removed.
func TestSpool_FIFO(t *testing.T) {
	ctx := t.Context()
	addr := redistest.Addr(t)
	base := redistest.Prefix(t)
	c1 := redis.NewClient(&redis.Options{Addr: addr})
	defer c1.Close()
	c2 := redis.NewClient(&redis.Options{Addr: addr})
	defer c2.Close()
	writer, reader := redisstore.NewSpool(c1, base), redisstore.NewSpool(c2, base)

	want := [][]byte{[]byte(`{"batch":1}`), {0, 0xff, '\n', 0}, []byte(`{"batch":3}`)}
	for _, d := range want {
		if err := writer.Put(ctx, d); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	if n, err := reader.Len(ctx); err != nil || n != 3 {
		t.Fatalf("Len() = %d, %v, want 3", n, err)
	}
	if n, err := c1.XLen(ctx, base+":spool").Result(); err != nil || n != 3 {
		t.Fatalf("XLEN %s:spool = %d, %v, want 3", base, n, err)
	}
	for i, w := range want {
		id, got, err := reader.Peek(ctx)
		if err != nil || id == "" {
			t.Fatalf("Peek #%d = %q, %v, want an entry", i, id, err)
		}
		if string(got) != string(w) {
			t.Fatalf("Peek #%d data = %q, want %q", i, got, w)
		}
		if err := reader.Remove(ctx, id); err != nil {
			t.Fatalf("Remove(%s): %v", id, err)
		}
		if err := writer.Remove(ctx, id); err != nil {
			t.Fatalf("Remove(%s) again = %v, want nil", id, err)
		}
	}
	if id, _, err := reader.Peek(ctx); err != nil || id != "" {
		t.Fatalf("Peek on empty spool = %q, %v, want \"\", nil", id, err)
	}
}
