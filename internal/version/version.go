// Package version is the version of reserve's programs, the one string
// that reserved and reservectl report. It imports only the standard
// library.
package version

import (
	"runtime"
	"runtime/debug"
	"strconv"
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
	return buildSetting("vcs.revision"), buildSetting("vcs.modified") == "true"
}

// Time returns the time of the commit the program was built from, as the
// build information records it (RFC 3339, in UTC), or "" when it recorded
// none.
func Time() string {
	return buildSetting("vcs.time")
}

// buildSetting returns the value of a setting of the build information,
// "" when it has none.
func buildSetting(key string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
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

// Text is what a program prints for its version (its version command and
// --version): Line, and on a second line the revision, with the time of
// its commit when the build recorded one.
func Text(program string) string {
	text := Line(program) + "\nrevision " + RevisionLabel()
	if t := Time(); t != "" {
		text += " (committed " + t + ")"
	}
	return text + "\n"
}

// Template is Text as a text/template (cobra's version template, behind
// --version) that prints it as it is.
func Template(program string) string {
	return "{{printf \"%s\" " + strconv.Quote(Text(program)) + "}}"
}
