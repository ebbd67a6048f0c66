package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

// settleHoldCmd runs "confirm" and "release" (kind): with --retry it
// resends the recorded intent of kind, else it starts one for the hold
// args name, or by default for the hold that the settled hold intent in
// the state file made.
func (env *commandEnv) settleHoldCmd(kind engine.OperationKind, retry *bool) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if *retry {
			if len(args) != 0 {
				return usageErrorf("--retry resends the recorded intent: do not pass a hold id")
			}
			return env.retryIntent(cmd.Context(), kind)
		}
		if len(args) > 1 {
			return usageErrorf("%s wants at most one hold id, got %d arguments (see '%s --help')", cmd.CommandPath(), len(args), cmd.CommandPath())
		}
		id := ""
		if len(args) == 1 {
			if id = args[0]; !engine.IsHoldID(id) {
				return usageErrorf("nothing sent: %q is not a hold id (32 lowercase hex digits)", id)
			}
		}
		return env.startSettleHold(cmd.Context(), kind, id)
	}
}

// startSettleHold starts the intent of kind (confirm or release) for hold
// id, or, for an empty id, for the hold that the state file's settled hold
// intent made. An open intent is never replaced. A settled hold intent
// that made the hold is replaced by the new intent in one write, and so is
// a settled intent that joined a waiting list, for a hold named (its
// offer); any other settled intent must be cleared with new-intent first.
func (env *commandEnv) startSettleHold(ctx context.Context, kind engine.OperationKind, id string) error {
	server, j, prev, err := env.openSession()
	if err != nil {
		return err
	}
	defer j.Close()
	held, isHold := prev.HeldHold()
	entry, waiting := prev.WaitingEntry()
	switch {
	case prev.IsOpen():
		return refuseNew(prev, kind)
	case waiting && id == "":
		return usageErrorf("no hold to %s: the last intent %s in %s joined a waiting list (entry %s), and an offer from it is a hold of its own; nothing sent: run 'reservectl waitlist' to see the offer's hold, then 'reservectl %s HOLD-ID'",
			kind, prev.Key, j.Path(), entry, kind)
	case waiting:
		// The entry lives on at the server, and its offer is settled
		// through its hold: the settled intent that joined the list
		// gives way to the confirmation or release of a hold.
		env.noteReplaced(prev)
		return env.begin(ctx, server, j, prev, false, env.settleHoldIntent(kind, id))
	case prev != nil && !isHold && id == "":
		return usageErrorf("no hold to %s: the last intent %s in %s is a settled %s intent (%s) that made no hold; nothing sent: pass a HOLD_ID after 'reservectl new-intent'",
			kind, prev.Key, j.Path(), prev.Kind, prev.Outcome.Status)
	case prev != nil && !isHold && prev.Effect() == engine.EffectRefused:
		// A settled intent that did nothing gives way to the new one.
		env.noteReplaced(prev)
		return env.begin(ctx, server, j, prev, false, env.settleHoldIntent(kind, id))
	case prev != nil && !isHold:
		return refuseNew(prev, kind)
	case prev != nil && id != "" && id != held:
		return usageErrorf("the last intent %s in %s made hold %s, not %s; nothing sent: run 'reservectl %s' for hold %s, or 'reservectl new-intent' first to %s another hold",
			prev.Key, j.Path(), held, id, kind, held, kind)
	case prev == nil && id == "":
		return usageErrorf("no hold to %s: %s holds no intent; nothing sent: pass a HOLD_ID, or make a hold with 'reservectl hold --workshop ID'", kind, j.Path())
	case prev != nil:
		id = held
	}
	return env.begin(ctx, server, j, prev, prev != nil, env.settleHoldIntent(kind, id))
}

// settleHoldIntent makes the intent of kind (confirm or release) for hold
// id.
func (env *commandEnv) settleHoldIntent(kind engine.OperationKind, id string) func(server, actor string) (*intent.Intent, error) {
	return func(server, actor string) (*intent.Intent, error) {
		in, err := intent.NewSettleHold(kind, id, server, actor)
		if err != nil {
			return nil, fmt.Errorf("%s hold %s: %w", kind, id, err)
		}
		return in, nil
	}
}
