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

// Revision returns the version control revision the program was built
// from and whether its tree had uncommitted changes, from the build
// information; revision is "" when the build recorded none (go build
// -buildvcs=false, or outside a checkout).
func Revision() (revision string, modified bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return revision, modified
}

// RevisionLabel is Revision as one string: the revision, with
// "-modified" appended when the tree had uncommitted changes, or
// "unknown".
func RevisionLabel() string {
	revision, modified := Revision()
	switch {
	case revision == "":
		return "unknown"
	case modified:
		return revision + "-modified"
	}
	return revision
}
