// Package version is the version of reserve's programs, the one string
// that reserved and reservectl report. It imports only the standard
// library.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the version the programs report; a release build sets it
// with -ldflags "-X github.com/reserve/reserve/internal/version.Version=v1.2.3".
var Version = ""

// String returns Version, else the main module's version from the build
// information, else "(devel)".
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// Line returns what a program's version command prints: its name, the
// version and the Go release it was built with.
func Line(program string) string {
	return program + " " + String() + " (" + runtime.Version() + ")"
}
