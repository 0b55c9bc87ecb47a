package main

import "testing"

// TestParseSize reads the sizes --memory-limit takes and refuses the rest.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"": 0, "2GiB": 2 << 30, "512MiB": 512 << 20, "1.5GB": 1_500_000_000, "1048576": 1 << 20, " 64 KiB ": 64 << 10} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"lots", "-1GiB", "0", "2TiB2", "1e30GB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = nil error, want one", in)
		}
	}
}
