package cli

import (
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
	// RevisionTime is the time of the revision's commit, when the build
	// recorded one.
	RevisionTime string `json:"revision_time,omitempty"`
}

// newVersionCmd returns "version", which asks no daemon.
func newVersionCmd(env *commandEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of reservectl",
		Long: `version prints the version of reservectl and the Go release it was built
with, and on a second line the version control revision it was built from
("-modified" when the tree had uncommitted changes, "unknown" when the build
recorded none) and the time of its commit; it sends nothing. 'reservectl
--version' prints the same, 'reserved version' the daemon's.`,
		Example: `  reservectl version
  reservectl --version
  reservectl --json version`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			v := versionJSON{Program: "reservectl", Version: version.String(), Go: runtime.Version(), Revision: version.RevisionLabel(), RevisionTime: version.Time()}
			return env.print(v, func(w io.Writer) error {
				_, err := io.WriteString(w, version.Text("reservectl"))
				return err
			})
		},
	}
}
