// Package cli is reservectl, the command-line client of reserved: a cobra
// command tree with one file per command, the mapping of every outcome to
// reservectl's exit codes (exit.go), and the rules that make a reservation
// from a shell exactly-once: the pending intent is written to the state file
// (package intent) before anything is sent, a retry resends that same intent,
// and only new-intent (or --new) starts the next one after an intent that
// did something, except that a confirmation or release of a hold continues
// from the settled intent that made the hold; a settled intent that had no
// effect gives way to the next one by itself.
// Holds, their confirmations and their releases are intents of their own,
// journaled and retried the same way. cmd/reservectl only calls Main.
//
// It talks to the daemon through package client only; it must not import the
// server, the daemon, bbolt or the store.
package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
	"github.com/reserve/reserve/internal/paths"
	"github.com/reserve/reserve/internal/version"
)

// The environment variables behind the global flags.
const (
	EnvSocket    = paths.EnvSocket
	EnvServer    = "RESERVECTL_SERVER"
	EnvToken     = "RESERVECTL_TOKEN"
	EnvTokenFile = "RESERVECTL_TOKEN_FILE"
	EnvState     = "RESERVECTL_STATE"
)

// defaultTimeout bounds the wait for each answer from reserved.
const defaultTimeout = 10 * time.Second

// Main runs reservectl with the process's arguments and returns its exit
// code. SIGINT and SIGTERM cancel the command: a reservation in flight then
// ends as "outcome unknown" with its intent kept.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// Run runs reservectl with args and returns its exit code (see exit.go).
// Results go to stdout; a failure or a reservation that did not succeed is
// reported as one line on stderr and, with --json, as a JSON object on
// stdout too (an intent's outcome as its outcome object, any other failure
// as errorJSON).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root, env := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(stderr, reworded(err, errorLine(err)))
		// With --json stdout holds one object: a command that printed its
		// own (a status that then refused to ask) keeps it.
		if asJSON, _ := root.PersistentFlags().GetBool("json"); asJSON && !env.printed {
			if j := failureJSON(err); j != nil {
				env.printJSON(j)
			}
		}
	}
	return exitCode(err)
}

// commandEnv is what every command runs with: the global flags (where
// reserved is, as whom, the state file, the timeout, --json) and the output
// streams.
type commandEnv struct {
	socket    string
	server    string
	token     string
	tokenFile string
	state     string
	timeout   time.Duration
	json      bool

	stdout, stderr io.Writer
	flags          *pflag.FlagSet
	// printed is set once a JSON document was written to stdout.
	printed bool
}

// newRoot returns the whole command tree of reservectl and the environment
// its commands run with.
func newRoot(stdout, stderr io.Writer) (*cobra.Command, *commandEnv) {
	env := &commandEnv{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "reservectl",
		Short: "reservectl reserves workshop places through reserved, exactly once",
		Long: `reservectl is the command-line client of reserved. One intended reservation
has exactly one effect however often you retry it: "reserve" writes the intent
(a new operation key and the payload) to a local state file before it sends
anything, "reserve --retry" resends that same intent after a timeout, a crash
or a lost answer, and after a reservation only "new-intent" (or "reserve
--new") starts the next one. An intent that had no effect (rejected or
unavailable) gives way to the next "reserve" by itself, which says so.

"hold" keeps places until a deadline, "confirm" turns the hold into a
reservation and "release" gives its places back; each is an intent of its
own, journaled and retried the same way. "reserve --waitlist" joins a full
workshop's waiting list; freed places are offered in turn as a hold, which
"confirm" accepts, and "waitlist" shows your entries and offers, "waitlist
leave" takes you off a list.

Exit status:
   0  reserved (first time or replayed), cancelled, held or released; on a
      waiting list ("reserve --waitlist" answered "waiting") or off it
      ("waitlist leave": left, or left before); a delivery requeued or
      skipped
   2  usage error, or refused locally (nothing was sent)
   3  unavailable: not enough free places, or expired: the hold's or the
      offer's deadline passed (authoritative answers)
   4  rejected by the server (conflict, request contract, unknown workshop
      or hold, authentication), or the hold was settled before (released,
      already confirmed, already released), or the waiting list entry to
      leave was reserved before, or the delivery to skip was delivered or
      skipped before
   5  decided earlier, but reserved no longer keeps its answer (the
      receipt expired): the intent is settled; "reservectl list" shows
      your reservations
  75  outcome unknown (timeout, lost or garbled answer, server error, store
      unavailable, daemon unreachable): the intent is kept; run
      "reservectl reserve --retry"
   1  anything else`,
		Example: `  reservectl reserve --workshop workshop-demo --quantity 1
  reservectl reserve --retry          # after "outcome unknown": same key, same payload
  reservectl status                   # the local intent and the server's receipt
  reservectl new-intent               # the next reserve gets a new key
  reservectl cancel ID                # cancel a reservation (its own intent; cancel --retry)
  reservectl hold --workshop workshop-demo --ttl 15m && reservectl confirm
  reservectl reserve --workshop workshop-demo --waitlist   # full? wait for a place
  reservectl waitlist                 # your places on waiting lists and offers
  reservectl --server https://reserve.example.com --token "$TOKEN" workshops`,
		Args:              noArgs,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(*cobra.Command, []string) error { return env.resolve() },
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.Version = version.String()
	root.SetVersionTemplate(version.Template("reservectl"))
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErrorf("%v (see '%s --help')", err, cmd.CommandPath())
	})

	statePath, err := intent.DefaultPath()
	if err != nil {
		statePath = ""
	}
	if v := os.Getenv(EnvState); v != "" {
		statePath = v
	}
	f := root.PersistentFlags()
	f.StringVar(&env.socket, "socket", paths.Socket(), "Unix socket of the local reserved (env "+EnvSocket+")")
	f.StringVar(&env.server, "server", "", "base URL of a reserved reached over TCP, e.g. http://127.0.0.1:8080 (env "+EnvServer+")")
	f.StringVar(&env.token, "token", "", "bearer token for --server (env "+EnvToken+")")
	f.StringVar(&env.tokenFile, "token-file", "", "read the bearer token for --server from this file (or pipe), which keeps it out of the process list; a file its group or others may read or write is refused (env "+EnvTokenFile+")")
	f.StringVar(&env.state, "state", statePath, "state file of the pending intent (env "+EnvState+")")
	f.DurationVar(&env.timeout, "timeout", defaultTimeout, "how long to wait for each answer from reserved")
	f.BoolVar(&env.json, "json", false, "print results as JSON")
	env.flags = f

	admin := newAdminCmd()
	admin.AddCommand(newAdminWorkshopCmd(env), newAdminAttendeesCmd(env), newAdminWaitlistCmd(env), newAdminTokenCmd(env), newAdminBackupCmd(env), newAdminOperationsCmd(env),
		newAdminWebhookCmd(env), newAdminDeliveriesCmd(env), newAdminDeliveryCmd(env))
	root.AddCommand(
		newReserveCmd(env),
		newCancelCmd(env),
		newHoldCmd(env),
		newConfirmCmd(env),
		newReleaseCmd(env),
		newNewIntentCmd(env),
		newStatusCmd(env),
		newListCmd(env),
		newWaitlistCmd(env),
		newWorkshopsCmd(env),
		newWhoamiCmd(env),
		newVersionCmd(env),
		newLoginLinkCmd(env),
		newBenchCmd(env),
		newImportCmd(env),
		admin,
	)
	return root, env
}

// resolve applies the environment to the global flags the command line did
// not set, and checks them.
func (env *commandEnv) resolve() error {
	if !env.flags.Changed("server") {
		env.server = os.Getenv(EnvServer)
	}
	tokenFlag, fileFlag := env.flags.Changed("token"), env.flags.Changed("token-file")
	if !fileFlag && !tokenFlag {
		env.tokenFile = os.Getenv(EnvTokenFile)
	}
	if !tokenFlag && env.tokenFile == "" {
		env.token = os.Getenv(EnvToken)
	}
	switch {
	case env.flags.Changed("socket") && env.flags.Changed("server"):
		return usageErrorf("--socket and --server exclude each other")
	case tokenFlag && fileFlag:
		return usageErrorf("--token and --token-file exclude each other")
	case tokenFlag && env.server == "":
		return usageErrorf("--token needs --server: on the Unix socket reserved knows you by your uid")
	case fileFlag && env.server == "":
		return usageErrorf("--token-file needs --server: on the Unix socket reserved knows you by your uid")
	case env.timeout <= 0:
		return usageErrorf("--timeout must be positive, not %s", env.timeout)
	case env.server == "" && env.socket == "":
		return usageErrorf("--socket must not be empty")
	}
	if env.server != "" {
		if _, err := intent.URLServer(env.server); err != nil {
			return &usageError{err: err}
		}
	}
	if env.tokenFile != "" && !tokenFlag && env.server != "" {
		tok, err := readTokenFile(env.tokenFile)
		if err != nil {
			return usageErrorf("--token-file: %v", err)
		}
		env.token = tok
	}
	return nil
}

// maxTokenFile bounds what readTokenFile reads: a token is far shorter.
const maxTokenFile = 4096

// readTokenFile returns the one token that the file at path holds (white
// space around it, such as a final newline, is dropped). The file may be a
// pipe, as a shell's process substitution makes. A regular file that its
// group or others may read or write is refused, as ssh refuses such a
// private key: whoever can read the token can act as its actor, and
// whoever can change it can make the command act as another.
func readTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := checkTokenFileMode(f, path); err != nil {
		return "", err
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(raw))
	if len(raw) > maxTokenFile || tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("%s must hold one bearer token and nothing else", path)
	}
	return tok, nil
}

// checkTokenFileMode refuses a regular file with permissions for its
// group or others. Systems without Unix permissions are not checked.
func checkTokenFileMode(f *os.File, path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if mode := fi.Mode(); mode.IsRegular() && mode.Perm()&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o, which lets others than its owner read or change it: a bearer token must be private; run chmod 600 %s", path, mode.Perm(), path)
	}
	return nil
}

// serverID returns the normalised name of the daemon the flags select, as
// recorded with an intent.
func (env *commandEnv) serverID() (string, error) {
	if env.server != "" {
		return intent.URLServer(env.server)
	}
	return intent.SocketServer(env.socket)
}

// client returns the API client the flags select.
func (env *commandEnv) client() *client.Client {
	if env.server != "" {
		return &client.Client{BaseURL: env.server, Token: env.token}
	}
	return &client.Client{Socket: env.socket}
}

// callContext bounds one request to reserved by --timeout.
func (env *commandEnv) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, env.timeout)
}

// whoami asks reserved who the caller is, within --timeout.
func (env *commandEnv) whoami(ctx context.Context, c *client.Client) (engine.Principal, error) {
	ctx, cancel := env.callContext(ctx)
	defer cancel()
	p, err := c.WhoAmI(ctx)
	if err != nil {
		return engine.Principal{}, fmt.Errorf("whoami: %w", err)
	}
	return p, nil
}

// openIntent opens and locks the state file for the whole command and loads
// its intent (nil for none). The caller closes the journal.
func (env *commandEnv) openIntent() (*intent.Journal, *intent.Intent, error) {
	if env.state == "" {
		return nil, nil, usageErrorf("no state file: set --state or %s (no home directory for the default)", EnvState)
	}
	j, err := intent.Open(env.state)
	if err != nil {
		return nil, nil, err
	}
	in, err := j.Load()
	if err != nil {
		j.Close()
		return nil, nil, err
	}
	return j, in, nil
}

// printJSON writes v to stdout as one line of JSON, so that the server's
// bodies inside it stay byte for byte as the server sent them.
func (env *commandEnv) printJSON(v any) error {
	enc := json.NewEncoder(env.stdout)
	enc.SetEscapeHTML(false)
	env.printed = true
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("print JSON: %w", err)
	}
	return nil
}

// print writes v with --json, else what text writes for people.
func (env *commandEnv) print(v any, text func(w io.Writer) error) error {
	if env.json {
		return env.printJSON(v)
	}
	return text(env.stdout)
}

// noArgs refuses positional arguments as a usage error, suggesting a
// command for a misspelt one.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command or argument %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageErrorf("%s (see '%s --help')", msg, cmd.CommandPath())
}

// exactArgs wants n positional arguments, else a usage error.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s wants %s, got %d arguments (see '%s --help')", cmd.CommandPath(), names, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// requireFlags refuses a command run without one of the named flags.
func requireFlags(cmd *cobra.Command, names ...string) error {
	var missing []string
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return usageErrorf("%s needs %s (see '%s --help')", cmd.CommandPath(), strings.Join(missing, " and "), cmd.CommandPath())
	}
	return nil
}
