package dist_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// lintianTag matches a line of lintian's output that reports a tag: its
// level (Error, Warning, Info, Pedantic, eXperimental, Classification),
// the package and the tag. Overridden tags are not shown unless asked for.
var lintianTag = regexp.MustCompile(`^[EWIPXC]: reserve[ :]`)

// TestLintian runs lintian on the package scripts/package.sh builds, with
// every level shown (errors, warnings, info, pedantic and experimental
// tags), and fails on any tag that dist/debian/lintian-overrides does not
// override. An override states why the tag does not apply; the rest is
// fixed in the package.
func TestLintian(t *testing.T) {
	need(t, haveTool("lintian"), "lintian (Debian package lintian)")
	deb := buildDeb(t)
	// An override that matches nothing is reported too (unused-override,
	// an info tag): it would silently hide a future tag of its name.
	cmd := exec.Command("lintian", "--display-level", ">=pedantic", "--display-experimental",
		"--fail-on", "error,warning,info,pedantic,experimental", deb)
	out, err := cmd.CombinedOutput()
	var tags []string
	for line := range strings.Lines(string(out)) {
		if lintianTag.MatchString(line) {
			tags = append(tags, line)
		}
	}
	if err != nil || len(tags) > 0 {
		t.Errorf("lintian %v; it reports tags that are neither fixed nor overridden (with a reason) in dist/debian/lintian-overrides:\n%s", err, out)
	}
}

// vendorFiles matches a pattern of a Files: field of the copyright file
// that names a Go module: vendor/MODULE/*.
var vendorFiles = regexp.MustCompile(`(?m)^(?:Files:)? +vendor/(\S+)/\*$`)

// TestCopyrightNamesEveryLinkedModule: the copyright file has a paragraph
// for every Go module that reserved or reservectl links, and none for a
// module they no longer link, so that it stays true as dependencies change.
func TestCopyrightNamesEveryLinkedModule(t *testing.T) {
	text, err := os.ReadFile("debian/copyright")
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, m := range vendorFiles.FindAllStringSubmatch(string(text), -1) {
		named = append(named, m[1])
	}
	out := run(t, "..", []string{"CGO_ENABLED=0"}, "go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}{{end}}{{end}}", "./cmd/reserved", "./cmd/reservectl")
	linked := []string{"std"}
	for line := range strings.Lines(out) {
		if m := strings.TrimSpace(line); m != "" && !slices.Contains(linked, m) {
			linked = append(linked, m)
		}
	}
	for _, m := range linked {
		if !slices.Contains(named, m) {
			t.Errorf("the programs link the module %s, but debian/copyright has no paragraph for vendor/%s/*: add it with the module's copyright holders and license", m, m)
		}
	}
	for _, m := range named {
		if !slices.Contains(linked, m) {
			t.Errorf("debian/copyright has a paragraph for vendor/%s/*, a module the programs no longer link: remove it", m)
		}
	}
}
