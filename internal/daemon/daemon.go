// Package daemon is the command tree of reserved, the reserve daemon:
// `reserved serve` (also the default), `reserved check` and `reserved
// version`. It wires the engine to the bbolt store and the HTTP server,
// owns the listeners and the process's lifetime, and turns every failure
// into one clear line and an exit code. cmd/reserved only calls Main.
//
// It must not import the client or any other program's command tree.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/version"
)

// Exit codes of reserved.
const (
	ExitOK       = 0
	ExitFailure  = 1 // Also: `check` found broken invariants.
	ExitUsage    = 2 // Also: `check` cannot open the database.
	exitFindings = 1
)

// exitError carries an exit code other than ExitFailure up to Run.
type exitError struct {
	code int
	err  error // Nil when everything was already said.
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// Main runs reserved with the process's arguments and returns its exit code.
func Main() int {
	return Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
}

// Run runs reserved with args and returns its exit code. Errors are printed
// to stderr as one line starting with "reserved: ".
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitFailure
	var ee *exitError
	if errors.As(err, &ee) {
		code, err = ee.code, ee.err
	}
	if err != nil {
		fmt.Fprintf(stderr, "reserved: %v\n", err)
	}
	return code
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	opts := &serveOptions{}
	root := &cobra.Command{
		Use:   "reserved",
		Short: "reserved is the reserve daemon: idempotent reservations over HTTP",
		Long: `reserved serves the reserve HTTP API: one intended reservation has exactly one
effect, however often its request is repeated.

Without a subcommand it runs "serve".`,
		Example: `  reserved                                   # serve on the default socket and 127.0.0.1:8080
  reserved serve --listen '' --socket /run/reserved.sock
  reserved check --db ~/.local/share/reserved/reserved.db
  reserved serve --store postgres --dsn postgres://reserve@db.example/reserve
  reserved migrate --from-db reserved.db --to-dsn postgres://reserve@db.example/reserve
  reserved version                           # also: reserved --version`,
		Args:          noArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return opts.run(cmd, stderr)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.Version = version.String()
	root.SetVersionTemplate(version.Template("reserved"))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: err}
	})
	opts.register(root)
	root.AddCommand(newServeCmd(stderr), newCheckCmd(stdout, stderr), newVersionCmd(stdout), newSeedCmd(stdout), newMigrateCmd(stdout))
	return root
}

// noArgs refuses arguments as a usage error (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	return nil
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of reserved and the revision it was built from",
		Example: "  reserved version",
		Args:    noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := io.WriteString(stdout, version.Text("reserved"))
			return err
		},
	}
}
