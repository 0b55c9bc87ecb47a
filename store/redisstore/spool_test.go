package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// The spool's contract (FIFO, byte for byte, across a reopen) is checked by
// storetest.Run (TestStore_Conformance); what follows is only Redis's.

// TestSpool_SharedByClients checks that the spool is the stream
// {base}:spool, and that two clients of the server share it: what one puts
// the other peeks and removes, and a removal through one is seen by both.
func TestSpool_SharedByClients(t *testing.T) {
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
	id, got, err := reader.Peek(ctx)
	if err != nil || id == "" || string(got) != string(want[0]) {
		t.Fatalf("reader Peek = %q, %q, %v, want the writer's first entry %q", id, got, err, want[0])
	}
	if err := reader.Remove(ctx, id); err != nil {
		t.Fatalf("reader Remove(%s): %v", id, err)
	}
	if err := writer.Remove(ctx, id); err != nil {
		t.Fatalf("writer Remove(%s) of the entry the reader removed = %v, want nil", id, err)
	}
	if id2, got, err := writer.Peek(ctx); err != nil || id2 == "" || id2 == id || string(got) != string(want[1]) {
		t.Fatalf("writer Peek after the reader's Remove = %q, %q, %v, want the second entry %q", id2, got, err, want[1])
	}
	if n, err := writer.Len(ctx); err != nil || n != 2 {
		t.Fatalf("writer Len() after the reader's Remove = %d, %v, want 2", n, err)
	}
}
