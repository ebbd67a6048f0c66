package engine

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	_ "time/tzdata" // Time zones are named by clients, so every build knows them all.
	"unicode/utf8"
)

// Schedule is what a person needs to know to come to a workshop, and when
// they may register for it. Every member is optional: a workshop written
// before workshops had a schedule has none, takes registrations at any
// time and has no limit per person.
//
// StartsAt and EndsAt are instants (EndsAt after StartsAt, and only with
// it); TimeZone is the IANA name of the zone a page shows them in.
// Registration is open from RegistrationOpensAt (when set) until
// RegistrationClosesAt, or until StartsAt when that is not set. Times are
// kept in UTC; a view shows them with the offset of TimeZone.
// MaxPerPerson, when not 0, is the most places one actor may have
// reserved and held in the workshop at once.
type Schedule struct {
	Description          string    `json:"description,omitempty"`
	Location             string    `json:"location,omitempty"`
	StartsAt             time.Time `json:"starts_at,omitzero"`
	EndsAt               time.Time `json:"ends_at,omitzero"`
	TimeZone             string    `json:"time_zone,omitempty"`
	RegistrationOpensAt  time.Time `json:"registration_opens_at,omitzero"`
	RegistrationClosesAt time.Time `json:"registration_closes_at,omitzero"`
	MaxPerPerson         int       `json:"max_per_person,omitempty"`
}

// The limits of a schedule's texts, in characters.
const (
	MaxDescriptionChars = 2000
	MaxLocationChars    = 200
)

// The earliest and the latest time of a schedule: every store keeps the
// whole seconds between them as they are (the bolt store writes Unix
// nanoseconds in an int64, 0 for none).
var (
	EarliestScheduleTime = time.Unix(1, 0).UTC()
	LatestScheduleTime   = time.Date(2261, 12, 31, 23, 59, 59, 0, time.UTC)
)

// The registration states of a workshop at a time.
const (
	RegistrationOpen    = "open"
	RegistrationNotOpen = "not_open"
	RegistrationClosed  = "closed"
)

// IsZero reports whether s has no member set: a workshop without a
// schedule.
func (s Schedule) IsZero() bool { return s == Schedule{} }

// ClosesAt returns when registration closes: RegistrationClosesAt, or
// StartsAt when that is not set; the zero time when it never closes.
func (s Schedule) ClosesAt() time.Time {
	if !s.RegistrationClosesAt.IsZero() {
		return s.RegistrationClosesAt
	}
	return s.StartsAt
}

// RegistrationAt returns the registration state at now.
func (s Schedule) RegistrationAt(now time.Time) string {
	if !s.RegistrationOpensAt.IsZero() && now.Before(s.RegistrationOpensAt) {
		return RegistrationNotOpen
	}
	if c := s.ClosesAt(); !c.IsZero() && !now.Before(c) {
		return RegistrationClosed
	}
	return RegistrationOpen
}

// Validate checks s as a whole: texts within their limits, times in
// order, a known time zone. The error text names the member.
func (s Schedule) Validate() error {
	if err := validateText(s.Description, MaxDescriptionChars, true); err != nil {
		return fmt.Errorf("member \"description\" %w", err)
	}
	if err := validateText(s.Location, MaxLocationChars, false); err != nil {
		return fmt.Errorf("member \"location\" %w", err)
	}
	if s.TimeZone != "" {
		if err := ValidateTimeZone(s.TimeZone); err != nil {
			return fmt.Errorf("member \"time_zone\" %w", err)
		}
	}
	for _, t := range []struct {
		name string
		at   time.Time
	}{{"starts_at", s.StartsAt}, {"ends_at", s.EndsAt}, {"registration_opens_at", s.RegistrationOpensAt}, {"registration_closes_at", s.RegistrationClosesAt}} {
		if !t.at.IsZero() && (t.at.Nanosecond() != 0 || t.at.Before(EarliestScheduleTime) || t.at.After(LatestScheduleTime)) {
			return fmt.Errorf("member %q must be a whole second from %s to %s", t.name, stamp(EarliestScheduleTime), stamp(LatestScheduleTime))
		}
	}
	if !s.EndsAt.IsZero() && s.StartsAt.IsZero() {
		return errors.New("member \"ends_at\" needs \"starts_at\": a workshop ends only after it starts")
	}
	if !s.EndsAt.IsZero() && !s.EndsAt.After(s.StartsAt) {
		return fmt.Errorf("member \"ends_at\" (%s) must be after \"starts_at\" (%s)", stamp(s.EndsAt), stamp(s.StartsAt))
	}
	if c := s.ClosesAt(); !s.RegistrationOpensAt.IsZero() && !c.IsZero() && !s.RegistrationOpensAt.Before(c) {
		return fmt.Errorf("member \"registration_opens_at\" (%s) must be before registration closes (%s)", stamp(s.RegistrationOpensAt), stamp(c))
	}
	if s.MaxPerPerson < 0 || s.MaxPerPerson > MaxQuantity {
		return fmt.Errorf("member \"max_per_person\" must be an integer from 1 to %d", MaxQuantity)
	}
	return nil
}

// stamp formats t for an error message.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// validateText checks a text of at most limit characters of valid UTF-8
// without control characters (line breaks and tabs too when multiline).
func validateText(s string, limit int, multiline bool) error {
	if !utf8.ValidString(s) {
		return errors.New("must be valid UTF-8 text")
	}
	if n := utf8.RuneCountInString(s); n > limit {
		return fmt.Errorf("must be at most %d characters, not %d", limit, n)
	}
	for _, r := range s {
		if r == 0x7f || (r < 0x20 && !(multiline && (r == '\n' || r == '\t' || r == '\r'))) {
			return errors.New("must be printable text without control characters")
		}
	}
	return nil
}

// ValidateTimeZone checks an IANA time zone name, such as Europe/Berlin or
// UTC. The error text completes the sentence `member "time_zone" …`.
func ValidateTimeZone(name string) error {
	if name == "" || name == "Local" {
		return fmt.Errorf("must name an IANA time zone such as Europe/Berlin, not %q", name)
	}
	if _, err := time.LoadLocation(name); err != nil {
		return fmt.Errorf("must name an IANA time zone such as Europe/Berlin, not %q", truncate(name, 50))
	}
	return nil
}

// inZone returns s with its times shown in its time zone (UTC when it has
// none), as a view shows them.
func (s Schedule) inZone() Schedule {
	loc := location(s.TimeZone)
	for _, t := range []*time.Time{&s.StartsAt, &s.EndsAt, &s.RegistrationOpensAt, &s.RegistrationClosesAt} {
		if !t.IsZero() {
			*t = t.In(loc)
		}
	}
	return s
}

// locations caches the time zones views were shown in, by name: loading
// one reads and parses its rules, and views are many.
var locations sync.Map // string → *time.Location

// location returns the time zone name, UTC for "" or a name it does not
// know.
func location(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	if l, ok := locations.Load(name); ok {
		return l.(*time.Location)
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	actual, _ := locations.LoadOrStore(name, l)
	return actual.(*time.Location)
}

// utc returns s with its times in UTC, as stores keep them.
func (s Schedule) utc() Schedule {
	for _, t := range []*time.Time{&s.StartsAt, &s.EndsAt, &s.RegistrationOpensAt, &s.RegistrationClosesAt} {
		if !t.IsZero() {
			*t = t.UTC()
		}
	}
	return s
}

// AdmissionRefusals are the statuses of a request for places that its
// workshop's registration window or limit per person refused (admit):
// decided refusals, stored and replayed like unavailable. Front ends that
// treat them alike ask IsAdmissionRefusal rather than list them.
var AdmissionRefusals = []string{StatusRegistrationNotOpen, StatusRegistrationClosed, StatusLimitReached}

// IsAdmissionRefusal reports whether status is one of AdmissionRefusals.
func IsAdmissionRefusal(status string) bool { return slices.Contains(AdmissionRefusals, status) }

// registrationRefusal returns the status of a request for places in w
// refused at now by its registration window, "" when registration is open.
func registrationRefusal(w Workshop, now time.Time) string {
	switch w.Schedule.RegistrationAt(now) {
	case RegistrationNotOpen:
		return StatusRegistrationNotOpen
	case RegistrationClosed:
		return StatusRegistrationClosed
	}
	return ""
}

// limitRefusal reports whether who asking for need more places of w goes
// over w's limit per person at now, and how many places who has already
// (Tx.PlacesOf, whose cost does not grow with who's history).
func limitRefusal(tx Tx, w Workshop, who string, need int, now time.Time) (Limit, bool, error) {
	if w.MaxPerPerson == 0 {
		return Limit{}, false, nil
	}
	places, err := tx.PlacesOf(w.ID, who, now)
	if err != nil {
		return Limit{}, false, fmt.Errorf("read the places of %s in workshop %s: %w", who, w.ID, err)
	}
	return limitOf(w, places.Total(), need)
}

// Places are the places one actor has in one workshop at one time, as a
// limit per person counts them: those of the actor's active reservations,
// of the actor's open holds whose deadline has not passed (an offer from
// the waiting list is such a hold), and of the actor's entries waiting on
// the workshop's waiting list (each is offered its places as a hold
// without the limit being checked again).
type Places struct {
	Reserved, Held, Waiting int
}

// Total is the number of places p counts against a limit per person.
func (p Places) Total() int { return p.Reserved + p.Held + p.Waiting }

// CountPlaces finds Tx.PlacesOf by scanning actor's reservations and
// holds of workshop (the store's index by workshop and actor) and actor's
// waiting list entries (the index by actor): a cost that grows with
// actor's history, for stores that keep nothing better and for checks of
// those that do.
func CountPlaces(tx Tx, workshop, actor string, now time.Time) (Places, error) {
	var p Places
	from := PersonPosition{Actor: actor}
	err := tx.ForEachReservationIn(workshop, from, func(r Reservation) error {
		if r.Actor != actor {
			return errEnough
		}
		if !r.Cancelled() {
			p.Reserved += r.Quantity
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return Places{}, fmt.Errorf("read the reservations of %s in workshop %s: %w", actor, workshop, err)
	}
	err = tx.ForEachHoldIn(workshop, from, func(h Hold) error {
		if h.Actor != actor {
			return errEnough
		}
		if h.Open() && h.ExpiresAt.After(now) {
			p.Held += h.Quantity
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return Places{}, fmt.Errorf("read the holds of %s in workshop %s: %w", actor, workshop, err)
	}
	err = tx.ForEachWaitEntryOf(actor, "", func(e WaitEntry) error {
		if e.Workshop == workshop && e.State == WaitWaiting {
			p.Waiting += e.Quantity
		}
		return nil
	})
	if err != nil {
		return Places{}, fmt.Errorf("read the waiting list entries of %s: %w", actor, err)
	}
	return p, nil
}

// limitOf is the verdict of w's limit per person on need more places for
// one who has already: the limit_reached answer's Limit when they go over
// it.
func limitOf(w Workshop, already, need int) (Limit, bool, error) {
	if already+need <= w.MaxPerPerson {
		return Limit{}, false, nil
	}
	return Limit{MaxPerPerson: w.MaxPerPerson, Already: already}, true, nil
}

// Limit is what a limit_reached answer says beside its request: the
// workshop's limit per person and the places the actor had already.
type Limit struct {
	MaxPerPerson int
	Already      int
}

// PersonPosition is a place in the order of a workshop's records by actor,
// then id (Tx.ForEachReservationIn, Tx.ForEachHoldIn).
type PersonPosition struct {
	Actor, ID string
}

// Before reports whether p comes before q.
func (p PersonPosition) Before(q PersonPosition) bool {
	return p.Actor < q.Actor || (p.Actor == q.Actor && p.ID < q.ID)
}

// admit judges a request of d's actor for need places of w by w's
// registration window and limit per person at d's time, inside the
// deciding transaction like capacity: it returns the status of the
// refusal, which d's receipt then stores (with the limit it reports), or
// "" when the request may go on to the capacity check.
func (d *draft) admit(tx Tx, w Workshop, need int) (string, error) {
	if refusal := registrationRefusal(w, d.now); refusal != "" {
		return refusal, nil
	}
	limit, over, err := limitRefusal(tx, w, d.Actor, need, d.now)
	if err != nil || !over {
		return "", err
	}
	d.Limit = limit
	return StatusLimitReached, nil
}
