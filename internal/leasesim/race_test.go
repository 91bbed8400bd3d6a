//go:build race

package leasesim

// raceEnabled says that the race detector is on: its scheduler runs the
// goroutines that wake together in a random order, so a seed's replay may
// take another turn.
const raceEnabled = true
