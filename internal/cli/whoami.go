package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// newWhoamiCmd returns "whoami".
func newWhoamiCmd(env *commandEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show the actor reserved knows you as",
		Long: `whoami asks reserved which actor you are: on the Unix socket the actor your
uid is bound to (unix-<username> as your account was named on your first
request, for good), over --server from your --token. Intents are bound to
this actor.`,
		Example: `  reservectl whoami
  reservectl --server http://127.0.0.1:8080 --token "$TOKEN" --json whoami`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := env.whoami(cmd.Context(), env.client())
			if err != nil {
				return err
			}
			return env.print(p, func(w io.Writer) error {
				role := ""
				if p.Admin {
					role = " (admin)"
				}
				_, err := fmt.Fprintf(w, "%s%s\n", p.Actor, role)
				return err
			})
		},
	}
}
