package cli

import (
	"io"

	"github.com/spf13/cobra"
)

// Command returns reservectl's whole command tree, writing to stdout and
// stderr, for tools that document it (man pages, shell completions).
func Command(stdout, stderr io.Writer) *cobra.Command {
	root, _ := newRoot(stdout, stderr)
	return root
}
