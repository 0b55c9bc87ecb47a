package main

import (
	"errors"
	"strconv"
	"strings"
)

// sizeUnits are the suffixes parseSize takes, longest first.
var sizeUnits = []struct {
	suffix string
	bytes  uint64
}{
	{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

// parseSize reads a memory size such as 2GiB, 512MiB, 1.5GB or 1048576
// (bytes); "" is 0, no limit.
func parseSize(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	mult := uint64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.bytes
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0) || f*float64(mult) > 1<<62 {
		return 0, errors.New("want a size such as 2GiB, 512MiB or 1.5GB")
	}
	return uint64(f * float64(mult)), nil
}
