package cli

import "github.com/spf13/cobra"

// newAdminCmd returns "admin", the group of the admins' commands.
func newAdminCmd() *cobra.Command {
	return groupCmd("admin", "Administer workshops, waiting lists, API tokens, webhooks and deliveries (admins only)",
		`admin holds the commands only admins may run: on the Unix socket root and the
daemon's own user, over --server the holders of an admin token.`,
		`  reservectl admin workshop set workshop-demo --capacity 20
  reservectl admin token create --actor alice
  reservectl admin deliveries --failed`)
}

// groupCmd returns a command that only groups subcommands: run alone, it
// prints its help.
func groupCmd(use, short, long, example string) *cobra.Command {
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		Example: example,
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
}
