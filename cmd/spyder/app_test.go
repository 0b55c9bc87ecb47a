package main

import (
	"bytes"
	"context"
	"testing"
)

// runApp runs the app in-process and returns its stdout; it fails the test
// on error.
func runApp(tb testing.TB, args ...string) string {
	tb.Helper()
	out, errOut, err := tryApp(tb.Context(), args...)
	if err != nil {
		tb.Fatalf("spyder %v: %v\nstderr:\n%s", args, err, errOut)
	}
	return out
}

// tryApp runs the app in-process and returns stdout, stderr and its error.
func tryApp(ctx context.Context, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := newApp(&out, &errOut).RunContext(ctx, append([]string{"spyder"}, args...))
	return out.String(), errOut.String(), err
}
