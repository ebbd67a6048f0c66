package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// newAdminTokenCmd returns "admin token" with "create", "list" and
// "revoke".
func newAdminTokenCmd(env *commandEnv) *cobra.Command {
	token := groupCmd("token", "Create, list and revoke API tokens for clients that use --server", "",
		`  reservectl admin token create --actor alice --expires-in 720h
  reservectl admin token list
  reservectl admin token revoke 3f1c9a0e5b7d24680acef13579bdf024`)
	token.AddCommand(newTokenCreateCmd(env), newTokenListCmd(env), newTokenRevokeCmd(env))
	return token
}

func newTokenCreateCmd(env *commandEnv) *cobra.Command {
	var (
		actor     string
		admin     bool
		expiresIn time.Duration
	)
	create := &cobra.Command{
		Use:   "create --actor NAME [--admin] [--expires-in DURATION]",
		Short: "Create a bearer token for an actor and print only the token",
		Long: `create makes a new random bearer token for the actor NAME and prints only the
token on stdout, so that a script can capture it; with --json it prints the
whole answer: the token's id (for "list" and "revoke"), the token, the actor,
whether it is an admin's and, with --expires-in, when it expires. reserved
stores only the token's SHA-256 hash: the token is shown this once.

--expires-in gives the token a lifetime (a Go duration: 90m, 720h; whole
seconds, at most ten years); after it, the token is refused with a message
that it expired. Without it the token works until it is revoked.`,
		Example: `  TOKEN=$(reservectl admin token create --actor alice)
  reservectl --server http://127.0.0.1:8080 --token "$TOKEN" whoami
  reservectl admin token create --actor ci-bot --expires-in 720h
  reservectl --json admin token create --actor ops --admin`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "actor"); err != nil {
				return err
			}
			if err := engine.ValidateActor(actor); err != nil {
				return flagError("--actor", err)
			}
			req := api.TokenRequest{Actor: actor, Admin: admin}
			if cmd.Flags().Changed("expires-in") {
				if expiresIn < time.Second || expiresIn > engine.MaxTokenLifetime || expiresIn%time.Second != 0 {
					return usageErrorf("--expires-in must be whole seconds from 1s to %s (ten years), not %s", engine.MaxTokenLifetime, expiresIn)
				}
				req.ExpiresInSeconds = int(expiresIn / time.Second)
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			t, err := env.client().IssueToken(ctx, req)
			if err != nil {
				return fmt.Errorf("create token for %s: %w", actor, err)
			}
			return env.print(t, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, t.Token)
				return err
			})
		},
	}
	create.Flags().StringVar(&actor, "actor", "", "the actor the token authenticates")
	create.Flags().BoolVar(&admin, "admin", false, "make the token an admin's")
	create.Flags().DurationVar(&expiresIn, "expires-in", 0, "the token's lifetime, e.g. 720h (default: until revoked)")
	return create
}

func newTokenListCmd(env *commandEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the API tokens: id, actor, admin, created, expires, last used",
		Long: `list shows the API tokens (not browser sessions or login links), oldest first:
each one's id (for "revoke"), actor, whether it is an admin's, when it was
created, when it expires ("never" without a lifetime; "expired" once past)
and when it was last used (to the minute; "-" if not yet). It never shows a
token itself: reserved keeps only hashes.`,
		Example: `  reservectl admin token list
  reservectl --json admin token list`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			list, err := env.client().Tokens(ctx)
			if err != nil {
				return fmt.Errorf("list tokens: %w", err)
			}
			if list == nil {
				list = []engine.TokenInfo{}
			}
			now := time.Now()
			return env.print(api.TokenList{Tokens: list}, func(out io.Writer) error {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tACTOR\tADMIN\tCREATED\tEXPIRES\tLAST USED")
				for _, t := range list {
					expires := "never"
					if !t.ExpiresAt.IsZero() {
						expires = stamp(t.ExpiresAt)
						if !now.Before(t.ExpiresAt) {
							expires += " (expired)"
						}
					}
					used := "-"
					if !t.LastUsedAt.IsZero() {
						used = stamp(t.LastUsedAt)
					}
					fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\t%s\n", t.ID, t.Actor, t.Admin, stamp(t.CreatedAt), expires, used)
				}
				return tw.Flush()
			})
		},
	}
}

// stamp is a time for the token table, in UTC to the second.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// tokenRevoked is what "admin token revoke --json" prints.
type tokenRevoked struct {
	ID      string `json:"id"`
	Revoked bool   `json:"revoked"`
}

func newTokenRevokeCmd(env *commandEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API token by its id: it is refused from the next request on",
		Long: `revoke deletes the API token with the id ID (see "list"). From the next request
on, the token is refused (401 unauthenticated) by every reserved, also by
the other daemons on a shared PostgreSQL database. An id that names no token,
also one revoked already, is refused with unknown_token (exit 4).`,
		Example: `  reservectl admin token list
  reservectl admin token revoke 3f1c9a0e5b7d24680acef13579bdf024`,
		Args: exactArgs(1, "the token ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if !engine.IsTokenID(id) {
				return usageErrorf("token ID %q must be 32 lowercase hex digits, as 'reservectl admin token list' shows them", engine.Truncate(id, 80))
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			if err := env.client().RevokeToken(ctx, id); err != nil {
				return fmt.Errorf("revoke token %s: %w", id, err)
			}
			return env.print(tokenRevoked{ID: id, Revoked: true}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "token %s revoked\n", id)
				return err
			})
		},
	}
}
