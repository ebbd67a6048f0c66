package cli

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/version"
)

// versionJSON is what --json version prints.
type versionJSON struct {
	Program  string `json:"program"`
	Version  string `json:"version"`
	Go       string `json:"go"`
	Revision string `json:"revision"`
}

// newVersionCmd returns "version", which asks no daemon.
func newVersionCmd(env *commandEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of reservectl",
		Long: `version prints the version of reservectl and the Go release it was built
with, and on a second line the version control revision it was built from
("-modified" when the tree had uncommitted changes, "unknown" when the build
recorded none); it sends nothing. 'reserved version' prints the daemon's.`,
		Example: `  reservectl version
  reservectl --json version`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			v := versionJSON{Program: "reservectl", Version: version.String(), Go: runtime.Version(), Revision: version.RevisionLabel()}
			return env.print(v, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "%s\nrevision %s\n", version.Line("reservectl"), v.Revision)
				return err
			})
		},
	}
}
