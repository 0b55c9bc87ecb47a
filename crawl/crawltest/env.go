package crawltest

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// EnvInt returns the integer in the environment variable name, or def when
// it is unset; a value that is not an integer fails tb. Benchmarks read
// their world's size this way (SPYDER_BENCH_HOSTS).
func EnvInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		tb.Fatalf("%s=%q: %v", name, s, err)
	}
	return n
}

// EnvDuration returns the duration in the environment variable name, or
// def when it is unset; a value time.ParseDuration refuses fails tb.
// Benchmarks read their world's latencies this way
// (SPYDER_BENCH_DNS_LATENCY, SPYDER_BENCH_HTTP_LATENCY).
func EnvDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		tb.Fatalf("%s=%q: %v", name, s, err)
	}
	return d
}
