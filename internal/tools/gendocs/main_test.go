package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/cli"
	"github.com/reserve/reserve/internal/daemon"
)

// TestGenerate checks that every command of both trees gets its man page,
// naming the version, and that each program gets its three completions.
func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	if err := generate(dir, "9.9.9"); err != nil {
		t.Fatal(err)
	}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if !cmd.IsAvailableCommand() || cmd.IsAdditionalHelpTopicCommand() {
			return
		}
		page := filepath.Join(dir, "man", "man1", strings.ReplaceAll(cmd.CommandPath(), " ", "-")+".1")
		text, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("no man page for %q: %v", cmd.CommandPath(), err)
		} else if !strings.Contains(string(text), `"reserve 9.9.9"`) {
			t.Errorf("%s does not name the version 9.9.9:\n%.200s", page, text)
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	for _, root := range []*cobra.Command{daemon.Command(io.Discard, io.Discard), cli.Command(io.Discard, io.Discard)} {
		walk(root)
		name := root.Name()
		for _, file := range []string{"bash/" + name, "zsh/_" + name, "fish/" + name + ".fish"} {
			text, err := os.ReadFile(filepath.Join(dir, "completions", file))
			if err != nil {
				t.Errorf("no %s completion: %v", file, err)
			} else if !strings.Contains(string(text), name) {
				t.Errorf("the completion %s does not complete %s", file, name)
			}
		}
	}
}
