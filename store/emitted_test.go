package store_test

import (
	"testing"

	"spyder/store"
	"spyder/store/storetest"
)

func TestMemoryEmitted_Conformance(t *testing.T) {
	storetest.RunEmitted(t, func(t *testing.T) store.Emitted { return &store.MemoryEmitted{} })
}
