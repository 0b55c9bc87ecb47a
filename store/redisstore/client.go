package redisstore

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// NewClient returns a client for addr, which is one of:
//
//   - host:port (a bare host means port 6379);
//   - a URL, redis://[user:password@]host:port[/db] or rediss:// for TLS,
//     with go-redis URL options as query parameters;
//   - a comma-separated list of host:port addresses of a Redis Cluster.
//
// The result is a [redis.UniversalClient], so the store and the limiter work
// with one server or a cluster alike (see the package doc on hash tags).
// NewClient does not connect; callers PING to check the server is there.
// Errors name the input, with any password redacted.
func NewClient(addr string) (redis.UniversalClient, error) {
	addr = strings.TrimSpace(addr)
	switch {
	case addr == "":
		return nil, fmt.Errorf("redis address is empty")
	case strings.Contains(addr, "://"):
		opts, err := redis.ParseURL(addr)
		if err != nil {
			return nil, fmt.Errorf("redis URL %q: %w", redact(addr), err)
		}
		return redis.NewClient(opts), nil
	case strings.Contains(addr, ","):
		var addrs []string
		for _, a := range strings.Split(addr, ",") {
			hp, err := hostPort(strings.TrimSpace(a))
			if err != nil {
				return nil, fmt.Errorf("redis cluster address list %q: %w", addr, err)
			}
			addrs = append(addrs, hp)
		}
		return newClusterClient(&redis.ClusterOptions{Addrs: addrs}), nil
	default:
		hp, err := hostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("redis address %q: %w", addr, err)
		}
		return redis.NewClient(&redis.Options{Addr: hp}), nil
	}
}

// hostPort checks one host[:port] address and adds the default port.
func hostPort(a string) (string, error) {
	if a == "" {
		return "", fmt.Errorf("empty address")
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			host, port = strings.Trim(a, "[]"), "6379"
		} else {
			return "", fmt.Errorf("want host:port: %w", err)
		}
	}
	if host == "" || strings.ContainsAny(host, " /@") {
		return "", fmt.Errorf("bad host %q", host)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("bad port %q", port)
	}
	return net.JoinHostPort(host, port), nil
}

// redact hides the password of a URL for error messages.
func redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	// Unparseable: hide whatever sits between "://" and the last "@".
	i := strings.Index(s, "://")
	j := strings.LastIndexByte(s, '@')
	if i >= 0 && j > i+3 {
		return s[:i+3] + "xxxxx" + s[j:]
	}
	return s
}
