package delivery

import (
	"fmt"
	"time"
)

// wording is what the mails say in one language. The sentences take, in
// order: the places ("2 places"), the workshop's quoted title, and the
// hold's deadline; the offer and its reminder take the title before the
// places (and then the offer's deadline), its expiry the places first
// again.
type wording struct {
	hello, helloName string

	reservedSubject, reserved                   string
	cancelledSubject, cancelled                 string
	heldSubject, held, heldForAWhile            string
	expiredSubject, expired                     string
	offerSubject, offer, offerUntil             string
	offerExpiredSubject, offerExpired           string
	reminderSubject, reminder                   string
	offerReminderSubject, offerReminder         string
	calendarAttached, noDate, calendarCancelled string
	gone                                        string

	whenLabel, whereLabel, reservationLabel, holdLabel, pageLabel string

	// places says a number of places; quote quotes a title.
	places func(n int) string
	quote  func(s string) string
	// date says the day of t; clock its time of day.
	date  func(t time.Time) string
	clock func(t time.Time) string
	// from, to join a start and an end on one day, or on two days.
	sameDay, twoDays string
}

// wordings are the mails' languages, by the tag of Profile.Language.
var wordings = map[string]*wording{
	"en": {
		hello:     "Hello,",
		helloName: "Hello %s,",

		reservedSubject:  "Reservation confirmed: %s",
		reserved:         "your reservation of %s in %s is confirmed.",
		cancelledSubject: "Reservation cancelled: %s",
		cancelled:        "your reservation of %s in %s is cancelled.",
		heldSubject:      "Places held for you: %s",
		held:             "your hold of %s in %s lasts until %s. Confirm it before then to turn it into a reservation; otherwise it expires.",
		heldForAWhile:    "your hold of %s in %s lasts for a limited time. Confirm it soon to turn it into a reservation; otherwise it expires.",
		expiredSubject:   "Hold expired: %s",
		expired:          "your hold of %s in %s was not confirmed in time and has expired, so no reservation came of it. If places are still free, you can reserve again.",
		offerSubject:     "Offer from the waiting list: %s",
		offer:            "the waiting list of %s offers you %s. Reserve on the page while the offer lasts; after that it goes to the next person waiting.",
		offerUntil:       "the waiting list of %s offers you %s until %s. Accept the offer on the page before then to turn it into a reservation; after that it goes to the next person waiting.",

		offerExpiredSubject: "Offer expired: %s",
		offerExpired:        "the offer of %s in %s from the waiting list was not accepted in time and has run out, so no reservation came of it; the places went on to the next person waiting. If you still want places, you can join the waiting list again.",

		reminderSubject:      "Your hold ends soon: %s",
		reminder:             "your hold of %s in %s lasts until %s. Confirm it before then to turn it into a reservation; otherwise it expires and the places are given to others. If you have confirmed or released it in the meantime, nothing more is needed.",
		offerReminderSubject: "Your offer from the waiting list ends soon: %s",
		offerReminder:        "the waiting list of %s still offers you %s, until %s. Accept the offer on the page before then to turn it into a reservation; after that it goes to the next person waiting. If you have accepted or declined it in the meantime, nothing more is needed.",

		calendarAttached:  "The workshop is attached as a calendar entry. Should the reservation be cancelled, the mail about it updates that entry in your calendar.",
		noDate:            "The workshop has no date yet, so no calendar entry is attached.",
		calendarCancelled: "If you added the workshop to your calendar, the calendar update attached to this mail marks it as cancelled there.",
		gone:              "The workshop %s no longer exists, so its date and place cannot be given here.",

		whenLabel:        "When: ",
		whereLabel:       "Where: ",
		reservationLabel: "Reservation: ",
		holdLabel:        "Hold: ",
		pageLabel:        "Your reservations: ",

		places: func(n int) string {
			if n == 1 {
				return "1 place"
			}
			return fmt.Sprintf("%d places", n)
		},
		quote: func(s string) string { return "“" + s + "”" },
		date:  func(t time.Time) string { return t.Format("Monday, 2 January 2006") },
		clock: func(t time.Time) string { return t.Format("15:04") },
		// Start day, start time, end time; or start day and time, end
		// day and time.
		sameDay: "%s, %s to %s",
		twoDays: "%s, %s to %s, %s",
	},
	"de": {
		hello:     "Guten Tag,",
		helloName: "Guten Tag %s,",

		reservedSubject:  "Reservierung bestätigt: %s",
		reserved:         "Ihre Reservierung über %s für %s ist bestätigt.",
		cancelledSubject: "Reservierung storniert: %s",
		cancelled:        "Ihre Reservierung über %s für %s ist storniert.",
		heldSubject:      "Plätze für Sie vorgemerkt: %s",
		held:             "Ihre Vormerkung über %s für %s gilt bis %s. Bestätigen Sie sie bis dahin, damit daraus eine Reservierung wird; sonst verfällt sie.",
		heldForAWhile:    "Ihre Vormerkung über %s für %s gilt nur für begrenzte Zeit. Bestätigen Sie sie bald, damit daraus eine Reservierung wird; sonst verfällt sie.",
		expiredSubject:   "Vormerkung abgelaufen: %s",
		expired:          "Ihre Vormerkung über %s für %s wurde nicht rechtzeitig bestätigt und ist abgelaufen; eine Reservierung ist daraus nicht entstanden. Wenn noch Plätze frei sind, können Sie erneut reservieren.",
		offerSubject:     "Angebot von der Warteliste: %s",
		offer:            "die Warteliste für %s bietet Ihnen %s an. Reservieren Sie auf der Seite, solange das Angebot gilt; danach geht es an die nächste Person auf der Liste.",
		offerUntil:       "die Warteliste für %s bietet Ihnen %s bis %s an. Nehmen Sie das Angebot bis dahin auf der Seite an, damit daraus eine Reservierung wird; danach geht es an die nächste Person auf der Liste.",

		offerExpiredSubject: "Angebot abgelaufen: %s",
		offerExpired:        "das Angebot der Warteliste über %s für %s wurde nicht rechtzeitig angenommen und ist abgelaufen; eine Reservierung ist daraus nicht entstanden, die Plätze gingen an die nächste Person auf der Liste. Wenn Sie weiterhin Plätze möchten, können Sie sich erneut auf die Warteliste setzen.",

		reminderSubject:      "Ihre Vormerkung läuft bald ab: %s",
		reminder:             "Ihre Vormerkung über %s für %s gilt noch bis %s. Bestätigen Sie sie bis dahin, damit daraus eine Reservierung wird; sonst verfällt sie und die Plätze gehen an andere. Falls Sie sie inzwischen bestätigt oder freigegeben haben, ist nichts weiter zu tun.",
		offerReminderSubject: "Ihr Angebot von der Warteliste läuft bald ab: %s",
		offerReminder:        "die Warteliste für %s bietet Ihnen %s noch bis %s an. Nehmen Sie das Angebot bis dahin auf der Seite an, damit daraus eine Reservierung wird; danach geht es an die nächste Person auf der Liste. Falls Sie es inzwischen angenommen oder abgelehnt haben, ist nichts weiter zu tun.",

		calendarAttached:  "Der Workshop ist als Kalendereintrag angehängt. Wird die Reservierung storniert, aktualisiert die Mail darüber diesen Eintrag in Ihrem Kalender.",
		noDate:            "Für den Workshop steht noch kein Termin fest, daher ist kein Kalendereintrag angehängt.",
		calendarCancelled: "Falls Sie den Workshop in Ihren Kalender übernommen haben, markiert ihn die angehängte Kalenderaktualisierung dort als abgesagt.",
		gone:              "Den Workshop %s gibt es nicht mehr, daher können Datum und Ort hier nicht genannt werden.",

		whenLabel:        "Wann: ",
		whereLabel:       "Wo: ",
		reservationLabel: "Reservierung: ",
		holdLabel:        "Vormerkung: ",
		pageLabel:        "Ihre Reservierungen: ",

		places: func(n int) string {
			if n == 1 {
				return "1 Platz"
			}
			return fmt.Sprintf("%d Plätze", n)
		},
		quote: func(s string) string { return "„" + s + "“" },
		date: func(t time.Time) string {
			return fmt.Sprintf("%s, %d. %s %d", germanWeekdays[t.Weekday()], t.Day(), germanMonths[t.Month()-1], t.Year())
		},
		clock:   func(t time.Time) string { return t.Format("15:04") + " Uhr" },
		sameDay: "%s, %s bis %s",
		twoDays: "%s, %s bis %s, %s",
	},
}

var (
	germanWeekdays = [...]string{"Sonntag", "Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag"}
	germanMonths   = [...]string{"Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober", "November", "Dezember"}
)

// zoneName is how the mails name a workshop's time zone: its IANA name,
// UTC when it has none.
func zoneName(name string) string {
	if name == "" {
		return "UTC"
	}
	return name
}

// instant says t (in the zone named zoneID) with its day, time of day and
// zone.
func (w *wording) instant(t time.Time, zoneID string) string {
	return fmt.Sprintf("%s, %s (%s)", w.date(t), w.clock(t), zoneName(zoneID))
}

// span says when a workshop from start to end (zero: no end) is, in loc
// (the zone named zoneID).
func (w *wording) span(start, end time.Time, loc *time.Location, zoneID string) string {
	if end.IsZero() {
		return w.instant(start, zoneID)
	}
	end = end.In(loc)
	if y, m, d := start.Date(); end.Year() == y && end.Month() == m && end.Day() == d {
		// The start's time of day goes without the unit that the end's
		// carries: "09:00 bis 12:30 Uhr".
		return fmt.Sprintf(w.sameDay, w.date(start), start.Format("15:04"), w.clock(end)) + " (" + zoneName(zoneID) + ")"
	}
	return fmt.Sprintf(w.twoDays, w.date(start), w.clock(start), w.date(end), w.clock(end)) + " (" + zoneName(zoneID) + ")"
}
