// Command gendocs writes the man pages and shell completions of reserved and
// reservectl, generated from their command trees, for packaging:
//
//	go run ./internal/tools/gendocs [-version V] DIR
//
// It writes DIR/man/man1/*.1 (one page for each command and subcommand),
// DIR/completions/bash/NAME, DIR/completions/zsh/_NAME and
// DIR/completions/fish/NAME.fish. The man pages' date is SOURCE_DATE_EPOCH
// when that is set, so a package can be built reproducibly.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/reserve/reserve/internal/cli"
	"github.com/reserve/reserve/internal/daemon"
)

func main() {
	version := flag.String("version", "", "the version the man pages name as their source")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: gendocs [-version V] DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := generate(flag.Arg(0), *version); err != nil {
		fmt.Fprintf(os.Stderr, "gendocs: %v\n", err)
		os.Exit(1)
	}
}

// generate writes the documents of both commands into dir.
func generate(dir, version string) error {
	for _, root := range []*cobra.Command{
		daemon.Command(io.Discard, io.Discard),
		cli.Command(io.Discard, io.Discard),
	} {
		if err := generateOne(dir, version, root); err != nil {
			return fmt.Errorf("%s: %w", root.Name(), err)
		}
	}
	return nil
}

func generateOne(dir, version string, root *cobra.Command) error {
	name := root.Name()
	// Without the tag the pages do not change with the day they are built.
	root.DisableAutoGenTag = true
	man := filepath.Join(dir, "man", "man1")
	if err := os.MkdirAll(man, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", man, err)
	}
	source := "reserve"
	if version != "" {
		source += " " + version
	}
	header := &doc.GenManHeader{Section: "1", Source: source, Manual: "reserve manual"}
	if err := doc.GenManTree(root, header, man); err != nil {
		return fmt.Errorf("write man pages to %s: %w", man, err)
	}
	completions := []struct {
		file string
		gen  func(io.Writer) error
	}{
		{filepath.Join("bash", name), func(w io.Writer) error { return root.GenBashCompletionV2(w, true) }},
		{filepath.Join("zsh", "_"+name), root.GenZshCompletion},
		{filepath.Join("fish", name+".fish"), func(w io.Writer) error { return root.GenFishCompletion(w, true) }},
	}
	for _, c := range completions {
		if err := writeFile(filepath.Join(dir, "completions", c.file), c.gen); err != nil {
			return err
		}
	}
	return nil
}

// writeFile creates path, and its directory, with what gen writes.
func writeFile(path string, gen func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := gen(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
