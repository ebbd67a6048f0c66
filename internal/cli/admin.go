package cli

import "github.com/spf13/cobra"

func newAdminCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "admin",
		Short: "Administer workshops and API tokens (admins only)",
		Long: `admin holds the commands only admins may run: on the Unix socket root and the
daemon's own user, over --server the holders of an admin token.`,
		Example: `  reservectl admin workshop set workshop-demo --capacity 20
  reservectl admin token create --actor alice`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
}
