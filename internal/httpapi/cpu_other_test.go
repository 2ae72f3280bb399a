//go:build !unix

package httpapi

import "time"

// processCPU cannot tell the process's CPU time here: benchmarks report no CPU figures.
func processCPU() time.Duration { return 0 }
