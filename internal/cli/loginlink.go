package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// newLoginLinkCmd returns "login-link".
func newLoginLinkCmd(env *commandEnv) *cobra.Command {
	var actor string
	var admin bool
	cmd := &cobra.Command{
		Use:   "login-link [--actor NAME] [--admin]",
		Short: "Print a one-time link that signs a browser in to the reservation form",
		Long: `login-link asks reserved over its Unix socket for a one-time login code for
your actor (unix-<username>) and prints the link to the browser form on
reserved's TCP listener. Opening the link signs that browser tab in: the
form uses the code up and keeps the session it gets for it in the tab. The
link works once and only for 5 minutes. An admin may ask for a link of another actor with --actor.

With --admin (admins only) the link opens an admin's session, in which the
browser also reaches the organizer's page, /admin: workshops, their
attendee lists and exports. Treat such a link like a password.`,
		Example: `  reservectl login-link
  xdg-open "$(reservectl login-link)"
  reservectl login-link --actor alice     # as an admin
  xdg-open "$(reservectl login-link --admin)"   # the organizer's page`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if env.server != "" {
				return usageErrorf("login-link asks reserved over its Unix socket, where it knows you by your uid; it does not work with --server")
			}
			if actor != "" {
				if err := engine.ValidateActor(actor); err != nil {
					return flagError("--actor", err)
				}
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			link, err := env.client().LoginLinkFor(ctx, api.LoginLinkRequest{Actor: actor, Admin: admin})
			if err != nil {
				return fmt.Errorf("login link: %w", err)
			}
			return env.print(link, func(w io.Writer) error {
				as := link.Actor
				if link.Admin {
					as += " with an admin's session (the organizer's page is /admin)"
				}
				fmt.Fprintf(env.stderr, "Open this link in a browser to sign in as %s; it works once, until %s.\n", as, link.ExpiresAt.Local().Format(time.TimeOnly))
				_, err := fmt.Fprintln(w, link.URL)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&actor, "actor", "", "sign in as this actor instead of yourself (admins only)")
	cmd.Flags().BoolVar(&admin, "admin", false, "open an admin's session, which reaches the organizer's page /admin (admins only)")
	return cmd
}
