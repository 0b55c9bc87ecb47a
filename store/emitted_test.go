package store_test

import (
	"testing"

	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/storetest"
)

func TestMemoryEmitted_Conformance(t *testing.T) {
	storetest.RunEmitted(t, func(t *testing.T) store.Emitted { return &store.MemoryEmitted{} })
}
