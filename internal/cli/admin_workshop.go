package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reserve/reserve/internal/engine"
)

// newAdminWorkshopCmd returns "admin workshop" with "set" and "delete".
func newAdminWorkshopCmd(env *commandEnv) *cobra.Command {
	workshop := groupCmd("workshop", "Create, change or delete workshops", "",
		`  reservectl admin workshop set workshop-demo --capacity 20 --max-quantity 4
  reservectl admin workshop delete old-course`)
	workshop.AddCommand(newAdminWorkshopSetCmd(env), newAdminWorkshopDeleteCmd(env))
	return workshop
}

// clearable are the names --clear takes, each the flag that sets the
// optional member it clears.
var clearable = []string{"description", "location", "starts", "ends", "time-zone", "registration-opens", "registration-closes", "max-per-person", "offer-ttl"}

// setFlags are what "admin workshop set" reads from its flags.
type setFlags struct {
	capacity, maxQuantity, maxPerPerson int
	title, description, location        string
	starts, ends, opens, closes, zone   string
	hidden                              bool
	offerTTL                            time.Duration
	clear                               []string
	ifMatch                             uint64
}

// changeFlags are the flags of "admin workshop set" that change a member.
var changeFlags = []string{"capacity", "max-quantity", "title", "hidden", "description", "location", "starts", "ends", "time-zone", "registration-opens", "registration-closes", "max-per-person", "offer-ttl", "clear"}

func newAdminWorkshopSetCmd(env *commandEnv) *cobra.Command {
	var sf setFlags
	set := &cobra.Command{
		Use:   "set ID [--capacity N] [--title T] [--max-quantity M] [--max-per-person P] [--description D] [--location L] [--starts T] [--ends T] [--time-zone Z] [--registration-opens T] [--registration-closes T] [--hidden[=false]] [--offer-ttl D] [--clear NAMES] [--if-match V]",
		Short: "Create a workshop, or change only the members you name",
		Long: `set changes the members of workshop ID that its flags name, and only those:
every member you leave out keeps its value. If the workshop does not exist
yet, set creates it, and then needs --capacity (a new workshop's title is its
ID and its per-reservation maximum its capacity unless you say otherwise).
set without a flag that changes something is refused.

  --capacity N              total places; never below the places already
                            reserved and held. Raising it never turns an earlier
                            "unavailable" intent into a reservation: only a new
                            intent can use the new places, and people on the
                            waiting list are offered them first.
  --max-quantity M          most places one reservation may take (1 to the
                            capacity).
  --max-per-person P        most places one person may have reserved, held and
                            waited for (on its waiting list) in the workshop
                            at once (1 to the capacity);
                            "--clear max-per-person" removes the limit.
  --title, --description, --location
                            what people see; the description may have several
                            lines (2,000 characters), the location one (200).
  --starts, --ends          when the workshop takes place.
  --time-zone Z             the IANA zone its times are shown in (Europe/Berlin).
  --registration-opens T    before it, reservations are refused
                            (registration_not_open); without it registration is
                            open from the start.
  --registration-closes T   from it on, reservations are refused
                            (registration_closed); without it registration
                            closes when the workshop starts.
  --hidden                  leaves the workshop out of the workshop list (the
                            browser's and "reservectl workshops"); it can still
                            be read, reserved and held by its ID, and every stored
                            answer replays as stored. --hidden=false lists it
                            again.
  --offer-ttl D              how long a person offered places from the waiting
                            list has to confirm them (whole seconds from 1m to
                            720h, e.g. 2h or 48h); offers made before keep their
                            deadline. "--clear offer-ttl" sets the default back:
                            a day.
  --clear NAMES             clears optional members, named as their flags and
                            separated by commas: ` + strings.Join(clearable, ", ") + `.

Times are either RFC 3339 with their UTC offset (2027-03-06T10:00:00+01:00,
or ...Z for UTC), or a date and a time of day ("2027-03-06 10:00") read in
the zone that --time-zone names in the same command; a time of day that
the zone's clocks skip or show twice (when they are put forward or back) is
refused: give it with its offset.

--if-match V changes the workshop only if it still has version V (see
"reservectl workshops"); a stale version is refused and nothing changes.`,
		Example: `  reservectl admin workshop set go-intro --capacity 12 --title "Intro to Go"
  reservectl admin workshop set go-intro --time-zone Europe/Berlin \
      --starts "2027-03-06 10:00" --ends "2027-03-06 16:00" --location "Room 3.14" \
      --registration-opens 2027-02-01T09:00:00+01:00 --max-per-person 2
  reservectl admin workshop set go-intro --title "Intro to Go, part 1"    # nothing else changes
  reservectl admin workshop set go-intro --clear location,max-per-person
  reservectl admin workshop set go-intro --capacity 16 --if-match 3
  reservectl admin workshop set go-intro --offer-ttl 12h   # offers from the waiting list last 12 hours
  reservectl admin workshop set old-course --hidden`,
		Args: exactArgs(1, "the workshop ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if err := engine.ValidateWorkshopID(id); err != nil {
				return flagError("the workshop ID", err)
			}
			p, err := sf.patch(cmd.Flags())
			if err != nil {
				return err
			}
			var match *uint64
			if cmd.Flags().Changed("if-match") {
				match = &sf.ifMatch
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			created := false
			w, err := env.client().PatchWorkshop(ctx, id, p, match)
			if engine.ErrorCode(err) == engine.CodeUnknownWorkshop {
				if p.Capacity == nil {
					return fmt.Errorf("set workshop %s: %w", id, &engine.Error{Code: engine.CodeUnknownWorkshop,
						Message: fmt.Sprintf("workshop %q does not exist; to create it, give its --capacity too", id)})
				}
				w, created, err = env.client().PutWorkshop(ctx, id, p.Spec(), match)
			}
			if err != nil {
				return fmt.Errorf("set workshop %s: %w", id, err)
			}
			return env.print(w, func(out io.Writer) error {
				verb := "updated"
				if created {
					verb = "created"
				}
				listing := ""
				if w.Waiting > 0 {
					listing += fmt.Sprintf(", %d waiting", w.Waiting)
				}
				if w.OfferTTLSeconds != 0 {
					listing += ", offers last " + shortDuration(time.Duration(w.OfferTTLSeconds)*time.Second)
				}
				if w.Hidden {
					listing += ", hidden from the list"
				}
				_, err := fmt.Fprintf(out, "%s workshop %s: capacity %d, %d reserved, %d available, at most %d per reservation, version %d%s\n%s",
					verb, w.ID, w.Capacity, w.Reserved, w.Available, w.MaxQuantity, w.Version, listing, workshopSchedule(w))
				return err
			})
		},
	}
	f := set.Flags()
	f.IntVar(&sf.capacity, "capacity", 0, "total places (needed to create a workshop)")
	f.IntVar(&sf.maxQuantity, "max-quantity", 0, "most places one reservation may take (a new workshop: the capacity)")
	f.IntVar(&sf.maxPerPerson, "max-per-person", 0, "most places one person may have at once (--clear max-per-person removes the limit)")
	f.StringVar(&sf.title, "title", "", "title (a new workshop: its ID)")
	f.StringVar(&sf.description, "description", "", "description, up to 2,000 characters")
	f.StringVar(&sf.location, "location", "", "where it takes place, up to 200 characters")
	f.StringVar(&sf.starts, "starts", "", `when it starts: 2027-03-06T10:00:00+01:00, or "2027-03-06 10:00" with --time-zone`)
	f.StringVar(&sf.ends, "ends", "", "when it ends, after it starts (the forms of --starts)")
	f.StringVar(&sf.zone, "time-zone", "", "IANA time zone its times are shown in, e.g. Europe/Berlin")
	f.StringVar(&sf.opens, "registration-opens", "", "when registration opens (default: open now; the forms of --starts)")
	f.StringVar(&sf.closes, "registration-closes", "", "when registration closes (default: when it starts; the forms of --starts)")
	f.BoolVar(&sf.hidden, "hidden", false, "leave the workshop out of the workshop list (--hidden=false lists it again)")
	f.DurationVar(&sf.offerTTL, "offer-ttl", 0, "how long an offer from the waiting list lasts: whole seconds from 1m to 720h (default a day; --clear offer-ttl sets it back)")
	f.StringSliceVar(&sf.clear, "clear", nil, "clear these optional members, comma-separated: "+strings.Join(clearable, ","))
	f.Uint64Var(&sf.ifMatch, "if-match", 0, "change only if the workshop has this version")
	return set
}

// patch returns the change that the flags given ask for, refusing before
// anything is sent what the daemon would refuse or what would not say
// what it means: no change at all, a 0 that reads like "no limit", a
// limit above the capacity given with it, a time that is not one, a
// member both set and cleared.
func (sf *setFlags) patch(flags *pflag.FlagSet) (engine.WorkshopPatch, error) {
	var p engine.WorkshopPatch
	given := flags.Changed
	if !slices.ContainsFunc(changeFlags, given) {
		return p, usageErrorf("nothing sent: set needs at least one flag that changes something: --%s (see 'reservectl admin workshop set --help')", strings.Join(changeFlags, ", --"))
	}
	if given("capacity") {
		if sf.capacity < 0 || sf.capacity > engine.MaxQuantity {
			return p, usageErrorf("nothing sent: --capacity must be a whole number from 0 to %d, not %d", engine.MaxQuantity, sf.capacity)
		}
		p.Capacity = &sf.capacity
	}
	if given("max-quantity") {
		if sf.maxQuantity < 1 || sf.maxQuantity > engine.MaxQuantity {
			return p, usageErrorf("nothing sent: --max-quantity must be a whole number from 1 to %d, not %d: it is the most places one reservation may take", engine.MaxQuantity, sf.maxQuantity)
		}
		if p.Capacity != nil && sf.maxQuantity > max(sf.capacity, 1) {
			return p, usageErrorf("nothing sent: --max-quantity %d is above --capacity %d: one reservation cannot take more places than there are", sf.maxQuantity, sf.capacity)
		}
		p.MaxQuantity = &sf.maxQuantity
	}
	if given("max-per-person") {
		if sf.maxPerPerson < 1 || sf.maxPerPerson > engine.MaxQuantity {
			return p, usageErrorf("nothing sent: --max-per-person must be a whole number from 1 to %d, not %d; use --clear max-per-person to remove the limit", engine.MaxQuantity, sf.maxPerPerson)
		}
		if p.Capacity != nil && sf.maxPerPerson > max(sf.capacity, 1) {
			return p, usageErrorf("nothing sent: --max-per-person %d is above --capacity %d: one person cannot have more places than there are", sf.maxPerPerson, sf.capacity)
		}
		p.MaxPerPerson = &sf.maxPerPerson
	}
	if given("offer-ttl") {
		lo, hi := time.Duration(engine.MinOfferTTLSeconds)*time.Second, time.Duration(engine.MaxOfferTTLSeconds)*time.Second
		if sf.offerTTL%time.Second != 0 || sf.offerTTL < lo || sf.offerTTL > hi {
			return p, usageErrorf("nothing sent: --offer-ttl must be whole seconds from %s to %s, not %s", shortDuration(lo), shortDuration(hi), sf.offerTTL)
		}
		seconds := int(sf.offerTTL / time.Second)
		p.OfferTTLSeconds = &seconds
	}
	if given("title") {
		p.Title = &sf.title
	}
	if given("hidden") {
		p.Hidden = &sf.hidden
	}
	var zone *time.Location
	if given("time-zone") {
		if err := engine.ValidateTimeZone(sf.zone); err != nil {
			return p, flagError("--time-zone", err)
		}
		zone, _ = time.LoadLocation(sf.zone)
		p.TimeZone = &sf.zone
	}
	for _, t := range []struct {
		flag, value string
		dst         **time.Time
	}{{"starts", sf.starts, &p.StartsAt}, {"ends", sf.ends, &p.EndsAt}, {"registration-opens", sf.opens, &p.OpensAt}, {"registration-closes", sf.closes, &p.ClosesAt}} {
		if !given(t.flag) {
			continue
		}
		at, err := parseFlagTime("--"+t.flag, t.value, zone)
		if err != nil {
			return p, err
		}
		*t.dst = &at
	}
	for _, t := range []struct {
		flag  string
		value *string
		dst   **string
	}{{"description", &sf.description, &p.Description}, {"location", &sf.location, &p.Location}} {
		if !given(t.flag) {
			continue
		}
		if *t.value == "" {
			return p, usageErrorf("nothing sent: --%s is empty; use --clear %s to remove it", t.flag, t.flag)
		}
		*t.dst = t.value
	}
	return p, sf.clearMembers(given, &p)
}

// clearMembers points the members of p that --clear names at their zero
// values, refusing a name it does not know and a member that a flag sets
// in the same command.
func (sf *setFlags) clearMembers(given func(string) bool, p *engine.WorkshopPatch) error {
	zero, none := time.Time{}, 0
	empty := ""
	for _, name := range sf.clear {
		name = strings.TrimPrefix(strings.TrimSpace(name), "--")
		if !slices.Contains(clearable, name) {
			return usageErrorf("nothing sent: --clear %q names no optional member; it takes %s, separated by commas", name, strings.Join(clearable, ", "))
		}
		if given(name) {
			return usageErrorf("nothing sent: --%s and --clear %s contradict each other: give one of them", name, name)
		}
		switch name {
		case "description":
			p.Description = &empty
		case "location":
			p.Location = &empty
		case "time-zone":
			p.TimeZone = &empty
		case "starts":
			p.StartsAt = &zero
		case "ends":
			p.EndsAt = &zero
		case "registration-opens":
			p.OpensAt = &zero
		case "registration-closes":
			p.ClosesAt = &zero
		case "max-per-person":
			p.MaxPerPerson = &none
		case "offer-ttl":
			p.OfferTTLSeconds = &none
		}
	}
	return nil
}

func newAdminWorkshopDeleteCmd(env *commandEnv) *cobra.Command {
	var ifMatch uint64
	cmd := &cobra.Command{
		Use:   "delete ID [--if-match V]",
		Short: "Delete a workshop that nobody has places in",
		Long: `delete removes workshop ID. A workshop with active reservations or open holds
is refused (workshop_in_use, with how many places are reserved and held):
cancel those reservations and let the holds end first, or hide the workshop
with "admin workshop set ID --hidden" instead. So is one with people on its
waiting list ("reservectl admin waitlist ID" lists them): they leave it
first. Its cancelled reservations and
the stored answers of every operation on it stay: a retry of any of them
replays its answer as before. --if-match V deletes it only if it still has
version V.`,
		Example: `  reservectl admin workshop delete old-course
  reservectl admin workshop delete old-course --if-match 7`,
		Args: exactArgs(1, "the workshop ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if err := engine.ValidateWorkshopID(id); err != nil {
				return flagError("the workshop ID", err)
			}
			var match *uint64
			if cmd.Flags().Changed("if-match") {
				match = &ifMatch
			}
			ctx, cancel := env.callContext(cmd.Context())
			defer cancel()
			if err := env.client().DeleteWorkshop(ctx, id, match); err != nil {
				return fmt.Errorf("delete workshop %s: %w", id, err)
			}
			return env.print(map[string]string{"deleted": id}, func(out io.Writer) error {
				_, err := fmt.Fprintf(out, "deleted workshop %s\n", id)
				return err
			})
		},
	}
	cmd.Flags().Uint64Var(&ifMatch, "if-match", 0, "delete only if the workshop has this version")
	return cmd
}
