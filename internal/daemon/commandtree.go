package daemon

import (
	"io"

	"github.com/spf13/cobra"
)

// Command returns reserved's whole command tree, writing to stdout and
// stderr, for tools that document it (man pages, shell completions).
// Executing it behaves like Run.
func Command(stdout, stderr io.Writer) *cobra.Command {
	return newRootCmd(stdout, stderr)
}
