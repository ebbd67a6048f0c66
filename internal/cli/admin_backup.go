package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/atomicfile"
)

// newAdminBackupCmd returns "admin backup FILE".
func newAdminBackupCmd(env *commandEnv) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent snapshot of reserved's database to FILE (admins)",
		Long: `backup asks reserved for a consistent snapshot of its whole database
(workshops with their counters, reservations, receipts, tombstones, tokens,
outbox events) while it goes on serving, and writes it to FILE atomically:
FILE appears only once the whole snapshot is on disk and fsync'd, so an
interrupted backup leaves no FILE at all. The snapshot is a bbolt database:
check it with "reserved check --db FILE", and restore it by starting reserved
on it (stop the daemon, replace its --db file with FILE, start it). The
daemon keeps the snapshot in a temporary file beside its database until the
backup is written, so it needs that much free space there.

An existing FILE is not replaced unless --force. --timeout does not apply: a
backup takes as long as the database needs; Ctrl-C stops it and leaves no
FILE. A daemon on PostgreSQL answers 501: back it up with pg_dump.`,
		Example: `  reservectl admin backup /var/backups/reserved-$(date +%F).db
  reserved check --db /var/backups/reserved-$(date +%F).db
  reservectl admin backup --force latest.db`,
		Args: exactArgs(1, "the backup FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			if !force {
				if _, err := os.Lstat(path); err == nil {
					return usageErrorf("%s exists; nothing was written: pass --force to replace it", path)
				} else if !errors.Is(err, fs.ErrNotExist) {
					return usageErrorf("backup: %v", err)
				}
			}
			var n int64
			err := atomicfile.Write(path, func(w io.Writer) error {
				var err error
				n, err = env.client().Backup(cmd.Context(), w)
				return err
			})
			if err != nil {
				return fmt.Errorf("backup (no file was written): %w", err)
			}
			return env.print(struct {
				File  string `json:"file"`
				Bytes int64  `json:"bytes"`
			}{path, n}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "wrote a consistent backup of reserved to %s (%d bytes); check it with: reserved check --db %s\n", path, n, path)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing FILE")
	return cmd
}
