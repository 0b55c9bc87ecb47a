//go:build !race

package worker

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
