package redisstore_test

import (
	"os"
	"testing"

	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestMain is the one TestMain of package redisstore (queue, limiter and every
// other test file here): it stops the shared redis-server after the run.
func TestMain(m *testing.M) {
	os.Exit(redistest.Main(m))
}
