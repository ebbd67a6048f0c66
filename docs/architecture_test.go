package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchitectureNamesEveryPackage fails when docs/architecture.md does
// not name a directory of Go code under cmd/, internal/ or scripts/, so
// that its map of the packages stays whole.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	page, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, root := range []string{"cmd", "internal", "scripts"} {
		err := filepath.WalkDir(filepath.Join("..", root), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") {
				rel, err := filepath.Rel("..", filepath.Dir(path))
				if err != nil {
					return err
				}
				dirs[filepath.ToSlash(rel)] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(dirs) < 10 {
		t.Fatalf("found only %d package directories: %v", len(dirs), dirs)
	}
	for dir := range dirs {
		if !strings.Contains(string(page), "`"+dir+"`") {
			t.Errorf("docs/architecture.md does not name the package directory `%s`", dir)
		}
	}
}
