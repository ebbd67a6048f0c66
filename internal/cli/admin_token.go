package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// newAdminTokenCmd returns "admin token" with "create".
func newAdminTokenCmd(env *commandEnv) *cobra.Command {
	token := groupCmd("token", "Create API tokens for clients that use --server", "",
		"  reservectl admin token create --actor alice")
	var (
		actor string
		admin bool
	)
	create := &cobra.Command{
		Use:   "create --actor NAME [--admin]",
		Short: "Create a bearer token for an actor and print only the token",
		Long: `create makes a new random bearer token for the actor NAME and prints only the
token on stdout, so that a script can capture it. reserved stores only its
SHA-256 hash: the token is shown this once.`,
		Example: `  TOKEN=$(reservectl admin token create --actor alice)
  reservectl --server http://127.0.0.1:8080 --token "$TOKEN" whoami
  reservectl admin token create --actor ops --admin`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "actor"); err != nil {
				return err
			}
			if err := engine.ValidateActor(actor); err != nil {
				return usageErrorf("--actor: %v", err)
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			tok, err := env.client().CreateToken(ctx, actor, admin)
			if err != nil {
				return fmt.Errorf("create token for %s: %w", actor, err)
			}
			return env.print(api.TokenResponse{Token: tok, Actor: actor, Admin: admin}, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, tok)
				return err
			})
		},
	}
	create.Flags().StringVar(&actor, "actor", "", "the actor the token authenticates")
	create.Flags().BoolVar(&admin, "admin", false, "make the token an admin's")
	token.AddCommand(create)
	return token
}
