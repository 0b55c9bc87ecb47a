package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

func TestNewClient(t *testing.T) {
	tests := []struct {
		in       string
		addrs    []string // cluster when more than one
		user, pw string
		db       int
		tls      bool
	}{
		{in: "127.0.0.1:6379", addrs: []string{"127.0.0.1:6379"}},
		{in: " redis.internal ", addrs: []string{"redis.internal:6379"}},
		{in: "[::1]:7000", addrs: []string{"[::1]:7000"}},
		{in: "redis://127.0.0.1:6380/2", addrs: []string{"127.0.0.1:6380"}, db: 2},
		{in: "redis://probe:s3cret@redis.internal:6379/0", addrs: []string{"redis.internal:6379"}, user: "probe", pw: "s3cret"},
		{in: "redis://:s3cret@redis.internal", addrs: []string{"redis.internal:6379"}, pw: "s3cret"},
		{in: "rediss://redis.internal:6380", addrs: []string{"redis.internal:6380"}, tls: true},
		{in: "10.0.0.1:7000,10.0.0.2:7000, 10.0.0.3", addrs: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:6379"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, err := redisstore.NewClient(tt.in)
			if err != nil {
				t.Fatalf("NewClient(%q) error: %v", tt.in, err)
			}
			defer c.Close()
			if len(tt.addrs) > 1 {
				cc, ok := c.(*redis.ClusterClient)
				if !ok {
					t.Fatalf("NewClient(%q) = %T, want *redis.ClusterClient", tt.in, c)
				}
				if got := strings.Join(cc.Options().Addrs, ","); got != strings.Join(tt.addrs, ",") {
					t.Errorf("cluster Addrs = %s, want %v", got, tt.addrs)
				}
				return
			}
			rc, ok := c.(*redis.Client)
			if !ok {
				t.Fatalf("NewClient(%q) = %T, want *redis.Client", tt.in, c)
			}
			o := rc.Options()
			if o.Addr != tt.addrs[0] || o.Username != tt.user || o.Password != tt.pw || o.DB != tt.db || (o.TLSConfig != nil) != tt.tls {
				t.Errorf("NewClient(%q) options addr=%s user=%q pw=%q db=%d tls=%v, want %s %q %q %d %v",
					tt.in, o.Addr, o.Username, o.Password, o.DB, o.TLSConfig != nil, tt.addrs[0], tt.user, tt.pw, tt.db, tt.tls)
			}
		})
	}
}

func TestNewClient_Malformed(t *testing.T) {
	for _, in := range []string{
		"",
		"127.0.0.1:notaport",
		"127.0.0.1:99999",
		"redis://127.0.0.1:6379/notadb",
		"http://127.0.0.1:6379",
		"10.0.0.1:7000,,10.0.0.2:7000",
		"redis://user:s3cret@127.0.0.1:6379/x",
	} {
		_, err := redisstore.NewClient(in)
		if err == nil {
			t.Errorf("NewClient(%q) error = nil, want an error", in)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "s3cret") {
			t.Errorf("NewClient(%q) error %q shows the password", in, msg)
		}
		if in != "" && !strings.Contains(msg, strings.ReplaceAll(in, "s3cret", "xxxxx")) {
			t.Errorf("NewClient(%q) error %q does not name the input", in, msg)
		}
	}
}

func TestNewClient_Pings(t *testing.T) {
	addr := redistest.Addr(t)
	for _, in := range []string{addr, "redis://" + addr + "/1"} {
		c, err := redisstore.NewClient(in)
		if err != nil {
			t.Fatalf("NewClient(%q) error: %v", in, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.Ping(ctx).Err(); err != nil {
			t.Errorf("NewClient(%q).Ping() error: %v", in, err)
		}
		cancel()
		c.Close()
	}
}

func TestOpen_ClusterNeedsHashTag(t *testing.T) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer c.Close()
	_, err := redisstore.Open(context.Background(), c, redisstore.Options{Key: "spyder:queue"})
	if err == nil || !strings.Contains(err.Error(), "hash tag") {
		t.Errorf("Open(cluster, key without hash tag) error = %v, want one about the hash tag", err)
	}
}
