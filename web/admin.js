// admin.js is the organizer's page, /admin: the workshops with their
// places, creating, editing, hiding and deleting them, and per workshop
// the attendee list, its CSV and cancelling a reservation, and the waiting
// list (its entries in the order they joined, with their state) with the
// time an offer from it lasts, which the editor sets. It works for an
// admin's browser session only, the one a `reservectl login-link --admin`
// link opens: the page for reserving places keeps it in this tab's
// sessionStorage ("reserve.session") and this page sends it the same way,
// as "Authorization: Bearer …" and never a cookie. Anyone else is told
// how to get such a link, and nothing is sent.
//
// Every write is an intent, with the rules of the page for reserving:
// {id, kind, workshop, body, if_match, base, …, actor} is kept in
// sessionStorage ("reserve.admin.<actor>") before its first send; an
// answer that does not say for sure what happened, or none within 15 s,
// leaves it open as "outcome unclear — retry"; a retry sends the same
// request again (a cancellation its Idempotency-Key, a change its
// If-Match); nothing is sent by itself, also not after a reload, and a
// second click while a request is on its way sends nothing.
//
// A change (PATCH, a JSON merge patch of the members that differ from the
// workshop as the form loaded it) carries If-Match with the version it was
// loaded at. When the daemon answers 412 version_mismatch the page reads
// the workshop again: when it already has the values the change asked for
// (the first send of a retried change was saved), the change is done;
// otherwise the editor shows what changed since it was loaded, keeps the
// organizer's values and saves nothing until the organizer decides. A
// creation reads the id first and sends nothing when a workshop has it
// (PUT has no create-only precondition, so only a creation of the same id
// in the moment between the read and the PUT could still meet it); a
// deletion carries If-Match too.
//
// The dates of a workshop are shown, and its form's date and time fields
// are read, in the workshop's own time zone, whatever the browser's is.
"use strict";

(function () {
  const { RESERVATION_ID, WORKSHOP_ID, places, plaetze, request } = COMMON;
  const OPS_PREFIX = "reserve.admin."; // + actor: {"<slot>": intent}.
  const PAGE_SIZE = 50;
  const TIMES = ["starts_at", "ends_at", "registration_opens_at", "registration_closes_at"];
  const KINDS = ["create", "patch", "delete", "cancel"];

  const TEXT = COMMON.texts({
    en: {
      title: "Organizer's page",
      description: "The organizer's page: workshops with their places, schedule and registration, attendee lists and waiting lists.",
      toPerson: "Reserve a place",
      signInTitle: "Sign in as an organizer",
      whySignedOut: "This tab is not signed in. The organizer's page works for organizers (admins) only.",
      whyNotAdmin: (a) => `This tab is signed in as ${a}, who is not an organizer (admin) here: the organizer's page is not for this sign-in.`,
      signInHow: "On the machine that runs reserved, run this command as an admin (root or the daemon's user) and open the link it prints in this browser:",
      signInThen: "The link opens the page for reserving places, signed in as an organizer; follow “Organizer's page” at its top, in the same tab. The sign-in belongs to that tab only.",
      noStorage: "This browser does not let the page keep your request (session storage is unavailable), so it cannot be sent safely. Nothing was sent.",
      pendingTitle: "Requests with an unknown outcome",
      workshopsTitle: "Workshops",
      newWorkshop: "New workshop",
      reload: "Reload",
      loading: "Loading…",
      loadFailed: "The workshops could not be loaded; they are shown as this page last knew them.",
      noWorkshops: "There are no workshops yet.",
      count: (n) => `${n} ${n === 1 ? "workshop" : "workshops"}`,
      id: "Id",
      when: "When",
      where: "Where",
      placesLabel: "Places",
      placesText: (w) => `${w.capacity} in all: ${w.reserved} reserved, ${w.held} held, ${w.available} free`,
      perRequest: "Per request",
      perPerson: "Per person",
      registration: "Registration",
      regOpen: "open",
      regNotOpen: "not open yet",
      regClosed: "closed",
      shown: "Listed",
      hiddenYes: "hidden from the page for reserving",
      hiddenNo: "shown on the page for reserving",
      atMost: (n) => `at most ${places(n)}`,
      edit: "Edit",
      attendees: "Attendees",
      hide: "Hide",
      show: "Show",
      del: "Delete",
      deleteConfirm: (w) => `Delete “${w}” for good? It can be deleted only while nobody has a place reserved or held in it or waits for one.`,
      deleteYes: "Delete for good",
      keep: "Keep it",
      retry: "Retry",
      sending: "Sending…",
      newTitle: "New workshop",
      editTitle: (w) => `Edit “${w}”`,
      fId: "Id",
      fIdHint: "Lower-case letters, digits and hyphens, starting with a letter (2 to 41 characters). It cannot be changed later.",
      fTitle: "Title",
      fCapacity: "Places",
      fMaxQuantity: "Most places per request",
      fMaxPerPerson: "Most places per person",
      optionalHint: "Optional: leave empty for none.",
      fLocation: "Place",
      fDescription: "Description",
      fTimeZone: "Time zone",
      noZone: "none (times in UTC)",
      timeZoneHint: "The dates and times below are in this time zone.",
      fStarts: "Starts",
      fEnds: "Ends",
      fOpens: "Registration opens",
      opensHint: "Optional: empty means open now.",
      fCloses: "Registration closes",
      closesHint: "Optional: empty means when it starts.",
      save: "Save",
      closeEditor: "Close",
      badId: "The id must be lower-case letters, digits and hyphens, start with a letter and be 2 to 41 characters long. Nothing was sent.",
      badNumber: (f) => `${f}: enter a whole number. Nothing was sent.`,
      required: (f) => `${f} cannot be empty. Nothing was sent.`,
      badTime: (f) => `${f}: enter a date and a time. Nothing was sent.`,
      noSuchTime: (f, z) => `${f}: this time does not exist in ${z} (the clocks are put forward then). Nothing was sent.`,
      noChange: "Nothing changed, so nothing was sent.",
      exists: (id) => `A workshop with the id ${id} exists already. Choose another id; nothing was sent.`,
      created: (w) => `Created: ${w}.`,
      createdBefore: (w) => `Created: ${w} (the earlier request had been saved).`,
      existsOther: (id) => `A workshop with the id ${id} exists with other values; it was not overwritten. Look at it in the list.`,
      saved: (w) => `Saved: ${w}.`,
      savedBefore: (w) => `Saved: ${w} (the earlier request had been saved).`,
      hiddenDone: (w) => `Hidden: ${w} is no longer shown on the page for reserving.`,
      shownDone: (w) => `Shown: ${w} is on the page for reserving again.`,
      deleted: (w) => `Deleted: ${w}.`,
      inUse: (w) => `Not deleted: ${w} still has places reserved or held, or people on its waiting list. Cancel its reservations first (or let the holds end, and the people waiting leave the list); nothing was changed.`,
      gone: (w) => `${w} does not exist any more: someone deleted it. Nothing was saved.`,
      staleList: (w) => `Not saved: ${w} was changed by someone else since this page loaded it. The list shows it as it is now; decide again.`,
      staleDelete: (w) => `Not deleted: ${w} was changed by someone else since this page loaded it. Look at it again and delete it again if you still want to.`,
      refused: (d) => `The reservation service refused this, and nothing was changed: ${d}`,
      unclear: "Outcome unclear — retry. The request may or may not have taken effect; retrying sends the same request again and cannot apply it twice or overwrite another change.",
      unclearSignIn: "Outcome unclear — retry. Your session has ended: sign in again in this tab, then retry.",
      resumed: "This request was sent earlier and its outcome is not known. Press Retry to find out — nothing is sent until you do.",
      opCreate: (w) => `Create ${w}`,
      opPatch: (w) => `Change ${w}`,
      opHide: (w) => `Hide ${w}`,
      opShow: (w) => `Show ${w}`,
      opDelete: (w) => `Delete ${w}`,
      opCancel: (q, a, w) => `Cancel ${places(q)} of ${a} in ${w}`,
      staleText: "Not saved: someone else changed this workshop after you opened it. Your values are still in the form below. What changed meanwhile:",
      staleItem: (f, was, now) => `${f}: was “${was}”, is now “${now}”`,
      staleRebase: "Apply my changes to the current version",
      staleDiscard: "Discard my changes",
      staleRebased: "The form now shows the current version with your changes applied. Check it and press Save to save your changes.",
      empty: "empty",
      yes: "yes",
      no: "no",
      fHidden: "Hidden",
      attendeesTitle: (w) => `Attendees of “${w}”`,
      attendeesSummary: (w) => `${w.reserved} reserved, ${w.held} held in open holds, ${w.available} free of ${w.capacity}.`,
      downloadCSV: "Download CSV",
      closeAttendees: "Close",
      more: "More",
      attendeesLoading: "Loading attendees…",
      attendeesFailed: "The attendee list could not be loaded. Close it and open it again to retry.",
      attendeesEmpty: "Nobody has a place reserved.",
      attendeesCount: (n, more) => `${n} ${n === 1 ? "reservation" : "reservations"} shown${more ? "; there are more" : ""}.`,
      attendeeWhat: (q, at) => `${places(q)} · reserved ${at}`,
      stateActive: "active",
      stateCancelled: "cancelled",
      cancel: "Cancel reservation",
      cancelConfirm: (q, a) => `Cancel the reservation of ${places(q)} of ${a}? The places become free.`,
      cancelYes: "Yes, cancel it",
      cancelled: (q, a) => `Cancelled: the ${places(q)} of ${a} are free again.`,
      alreadyCancelled: "Already cancelled: this reservation was cancelled before; this cancellation changed nothing.",
      noReservation: "This reservation does not exist. Nothing was cancelled.",
      downloading: "Downloading…",
      downloaded: (f) => `Downloaded ${f}.`,
      downloadFailed: "The CSV could not be downloaded. Try again.",
      waitlistLabel: "Waiting list",
      waitlistText: (n, ttl) => `${n} waiting; an offer lasts ${ttl}`,
      waitlist: "Waiting list",
      fOfferTTL: "Seconds to accept an offer",
      offerTTLHint: "Optional: how long a person whose turn on the waiting list came has to accept the places, 60 to 2592000 (30 days); empty means 86400 (1 day).",
      days: (n) => (n === 1 ? "1 day" : `${n} days`),
      hours: (n) => (n === 1 ? "1 hour" : `${n} hours`),
      minutes: (n) => (n === 1 ? "1 minute" : `${n} minutes`),
      seconds: (n) => (n === 1 ? "1 second" : `${n} seconds`),
      queueTitle: (w) => `Waiting list of “${w}”`,
      queueSummary: (n, ttl) => `${n} waiting, in the order they joined; an offer lasts ${ttl}.`,
      closeQueue: "Close",
      queueLoading: "Loading the waiting list…",
      queueFailed: "The waiting list could not be loaded. Close it and open it again to retry.",
      queueEmpty: "Nobody has joined the waiting list.",
      queueCount: (n, more) => `${n} ${n === 1 ? "entry" : "entries"} shown${more ? "; there are more" : ""}.`,
      queueWhat: (q, at) => `${places(q)} · joined ${at}`,
      queueWaiting: (n) => (n ? `waiting, number ${n}` : "waiting"),
      queueOffered: (d) => `offered, until ${d}`,
      queueReserved: "accepted, reserved",
      queueLeft: "left",
      queueExpired: "offer expired",
      queueUnknown: "state not known",
    },
    de: {
      title: "Seite für Veranstalter",
      description: "Die Seite für Veranstalter: Workshops mit ihren Plätzen, Terminen und Anmeldung, Teilnehmerlisten und Wartelisten.",
      toPerson: "Platz reservieren",
      signInTitle: "Als Veranstalter anmelden",
      whySignedOut: "Dieser Tab ist nicht angemeldet. Die Seite für Veranstalter ist nur für Veranstalter (Admins).",
      whyNotAdmin: (a) => `Dieser Tab ist als ${a} angemeldet, und ${a} ist hier kein Veranstalter (Admin): Die Seite für Veranstalter ist nicht für diese Anmeldung.`,
      signInHow: "Führen Sie auf dem Rechner, auf dem reserved läuft, diesen Befehl als Admin (root oder der Benutzer des Dienstes) aus und öffnen Sie den ausgegebenen Link in diesem Browser:",
      signInThen: "Der Link öffnet die Seite zum Reservieren, als Veranstalter angemeldet; folgen Sie dort oben „Seite für Veranstalter“, im selben Tab. Die Anmeldung gilt nur für diesen Tab.",
      noStorage: "Dieser Browser erlaubt der Seite nicht, Ihre Anfrage zu speichern (Session Storage nicht verfügbar); sie kann daher nicht sicher gesendet werden. Es wurde nichts gesendet.",
      pendingTitle: "Anfragen mit unbekanntem Ergebnis",
      workshopsTitle: "Workshops",
      newWorkshop: "Neuer Workshop",
      reload: "Neu laden",
      loading: "Wird geladen…",
      loadFailed: "Die Workshops konnten nicht geladen werden; sie erscheinen so, wie die Seite sie zuletzt kannte.",
      noWorkshops: "Es gibt noch keine Workshops.",
      count: (n) => `${n} ${n === 1 ? "Workshop" : "Workshops"}`,
      id: "Kennung",
      when: "Wann",
      where: "Wo",
      placesLabel: "Plätze",
      placesText: (w) => `${w.capacity} insgesamt: ${w.reserved} reserviert, ${w.held} vorgemerkt, ${w.available} frei`,
      perRequest: "Pro Anfrage",
      perPerson: "Pro Person",
      registration: "Anmeldung",
      regOpen: "offen",
      regNotOpen: "noch nicht offen",
      regClosed: "geschlossen",
      shown: "Sichtbar",
      hiddenYes: "auf der Seite zum Reservieren verborgen",
      hiddenNo: "auf der Seite zum Reservieren sichtbar",
      atMost: (n) => `höchstens ${plaetze(n)}`,
      edit: "Bearbeiten",
      attendees: "Teilnehmende",
      hide: "Verbergen",
      show: "Zeigen",
      del: "Löschen",
      deleteConfirm: (w) => `„${w}“ endgültig löschen? Das geht nur, solange niemand darin einen Platz reserviert oder vorgemerkt hat oder auf einen wartet.`,
      deleteYes: "Endgültig löschen",
      keep: "Behalten",
      retry: "Erneut versuchen",
      sending: "Wird gesendet…",
      newTitle: "Neuer Workshop",
      editTitle: (w) => `„${w}“ bearbeiten`,
      fId: "Kennung",
      fIdHint: "Kleinbuchstaben, Ziffern und Bindestriche, beginnend mit einem Buchstaben (2 bis 41 Zeichen). Sie lässt sich später nicht ändern.",
      fTitle: "Titel",
      fCapacity: "Plätze",
      fMaxQuantity: "Höchstens Plätze pro Anfrage",
      fMaxPerPerson: "Höchstens Plätze pro Person",
      optionalHint: "Freiwillig: leer lassen für keine Grenze.",
      fLocation: "Ort",
      fDescription: "Beschreibung",
      fTimeZone: "Zeitzone",
      noZone: "keine (Zeiten in UTC)",
      timeZoneHint: "Die Daten und Uhrzeiten unten gelten in dieser Zeitzone.",
      fStarts: "Beginn",
      fEnds: "Ende",
      fOpens: "Anmeldung ab",
      opensHint: "Freiwillig: leer heißt ab sofort.",
      fCloses: "Anmeldung bis",
      closesHint: "Freiwillig: leer heißt bis zum Beginn.",
      save: "Speichern",
      closeEditor: "Schließen",
      badId: "Die Kennung besteht aus Kleinbuchstaben, Ziffern und Bindestrichen, beginnt mit einem Buchstaben und ist 2 bis 41 Zeichen lang. Es wurde nichts gesendet.",
      badNumber: (f) => `${f}: Geben Sie eine ganze Zahl ein. Es wurde nichts gesendet.`,
      required: (f) => `${f} darf nicht leer sein. Es wurde nichts gesendet.`,
      badTime: (f) => `${f}: Geben Sie Datum und Uhrzeit ein. Es wurde nichts gesendet.`,
      noSuchTime: (f, z) => `${f}: Diese Uhrzeit gibt es in ${z} nicht (die Uhren werden dann vorgestellt). Es wurde nichts gesendet.`,
      noChange: "Nichts geändert, daher wurde nichts gesendet.",
      exists: (id) => `Es gibt schon einen Workshop mit der Kennung ${id}. Wählen Sie eine andere; es wurde nichts gesendet.`,
      created: (w) => `Angelegt: ${w}.`,
      createdBefore: (w) => `Angelegt: ${w} (die frühere Anfrage war schon gespeichert).`,
      existsOther: (id) => `Es gibt einen Workshop mit der Kennung ${id} mit anderen Angaben; er wurde nicht überschrieben. Sehen Sie ihn in der Liste an.`,
      saved: (w) => `Gespeichert: ${w}.`,
      savedBefore: (w) => `Gespeichert: ${w} (die frühere Anfrage war schon gespeichert).`,
      hiddenDone: (w) => `Verborgen: ${w} erscheint nicht mehr auf der Seite zum Reservieren.`,
      shownDone: (w) => `Sichtbar: ${w} erscheint wieder auf der Seite zum Reservieren.`,
      deleted: (w) => `Gelöscht: ${w}.`,
      inUse: (w) => `Nicht gelöscht: In ${w} sind noch Plätze reserviert oder vorgemerkt, oder Personen stehen auf der Warteliste. Stornieren Sie zuerst die Reservierungen (oder lassen Sie die Vormerkungen enden und die Wartenden die Liste verlassen); es wurde nichts geändert.`,
      gone: (w) => `${w} gibt es nicht mehr: Jemand hat ihn gelöscht. Es wurde nichts gespeichert.`,
      staleList: (w) => `Nicht gespeichert: ${w} wurde von jemand anderem geändert, seit die Seite ihn geladen hat. Die Liste zeigt ihn, wie er jetzt ist; entscheiden Sie neu.`,
      staleDelete: (w) => `Nicht gelöscht: ${w} wurde von jemand anderem geändert, seit die Seite ihn geladen hat. Sehen Sie ihn erneut an und löschen Sie ihn noch einmal, wenn Sie es weiter wollen.`,
      refused: (d) => `Der Reservierungsdienst hat das abgelehnt, es wurde nichts geändert: ${d}`,
      unclear: "Ergebnis unklar — erneut versuchen. Die Anfrage hat vielleicht schon gewirkt; ein erneuter Versuch sendet dieselbe Anfrage noch einmal und kann sie nicht doppelt ausführen oder eine andere Änderung überschreiben.",
      unclearSignIn: "Ergebnis unklar — erneut versuchen. Ihre Sitzung ist abgelaufen: Melden Sie sich in diesem Tab neu an und versuchen Sie es dann erneut.",
      resumed: "Diese Anfrage wurde früher gesendet; ihr Ergebnis ist nicht bekannt. Mit „Erneut versuchen“ erfahren Sie es — vorher wird nichts gesendet.",
      opCreate: (w) => `${w} anlegen`,
      opPatch: (w) => `${w} ändern`,
      opHide: (w) => `${w} verbergen`,
      opShow: (w) => `${w} zeigen`,
      opDelete: (w) => `${w} löschen`,
      opCancel: (q, a, w) => `${plaetze(q)} von ${a} in ${w} stornieren`,
      staleText: "Nicht gespeichert: Jemand anderes hat diesen Workshop geändert, nachdem Sie ihn geöffnet hatten. Ihre Angaben stehen weiter im Formular unten. Was sich inzwischen geändert hat:",
      staleItem: (f, was, now) => `${f}: war „${was}“, ist jetzt „${now}“`,
      staleRebase: "Meine Änderungen auf den jetzigen Stand anwenden",
      staleDiscard: "Meine Änderungen verwerfen",
      staleRebased: "Das Formular zeigt jetzt den jetzigen Stand mit Ihren Änderungen. Prüfen Sie es und speichern Sie, um Ihre Änderungen zu sichern.",
      empty: "leer",
      yes: "ja",
      no: "nein",
      fHidden: "Verborgen",
      attendeesTitle: (w) => `Teilnehmende von „${w}“`,
      attendeesSummary: (w) => `${w.reserved} reserviert, ${w.held} in offenen Vormerkungen, ${w.available} frei von ${w.capacity}.`,
      downloadCSV: "CSV herunterladen",
      closeAttendees: "Schließen",
      more: "Mehr",
      attendeesLoading: "Teilnehmende werden geladen…",
      attendeesFailed: "Die Liste der Teilnehmenden konnte nicht geladen werden. Schließen und öffnen Sie sie erneut.",
      attendeesEmpty: "Niemand hat einen Platz reserviert.",
      attendeesCount: (n, more) => `${n} ${n === 1 ? "Reservierung" : "Reservierungen"} gezeigt${more ? "; es gibt weitere" : ""}.`,
      attendeeWhat: (q, at) => `${plaetze(q)} · reserviert ${at}`,
      stateActive: "aktiv",
      stateCancelled: "storniert",
      cancel: "Reservierung stornieren",
      cancelConfirm: (q, a) => `Die Reservierung von ${plaetze(q)} von ${a} stornieren? Die Plätze werden frei.`,
      cancelYes: "Ja, stornieren",
      cancelled: (q, a) => `Storniert: Die ${plaetze(q)} von ${a} sind wieder frei.`,
      alreadyCancelled: "Bereits storniert: Diese Reservierung wurde schon früher storniert; diese Stornierung hat nichts geändert.",
      noReservation: "Diese Reservierung gibt es nicht. Es wurde nichts storniert.",
      downloading: "Wird heruntergeladen…",
      downloaded: (f) => `${f} heruntergeladen.`,
      downloadFailed: "Die CSV-Datei konnte nicht heruntergeladen werden. Versuchen Sie es erneut.",
      waitlistLabel: "Warteliste",
      waitlistText: (n, ttl) => `${n} ${n === 1 ? "wartet" : "warten"}; ein Angebot gilt ${ttl}`,
      waitlist: "Warteliste",
      fOfferTTL: "Sekunden zum Annehmen eines Angebots",
      offerTTLHint: "Freiwillig: Wie lange jemand, der auf der Warteliste an der Reihe ist, die Plätze annehmen kann, 60 bis 2592000 (30 Tage); leer heißt 86400 (1 Tag).",
      days: (n) => (n === 1 ? "1 Tag" : `${n} Tage`),
      hours: (n) => (n === 1 ? "1 Stunde" : `${n} Stunden`),
      minutes: (n) => (n === 1 ? "1 Minute" : `${n} Minuten`),
      seconds: (n) => (n === 1 ? "1 Sekunde" : `${n} Sekunden`),
      queueTitle: (w) => `Warteliste von „${w}“`,
      queueSummary: (n, ttl) => `${n} ${n === 1 ? "wartet" : "warten"}, in der Reihenfolge der Anmeldung; ein Angebot gilt ${ttl}.`,
      closeQueue: "Schließen",
      queueLoading: "Die Warteliste wird geladen…",
      queueFailed: "Die Warteliste konnte nicht geladen werden. Schließen und öffnen Sie sie erneut.",
      queueEmpty: "Niemand steht auf der Warteliste.",
      queueCount: (n, more) => `${n} ${n === 1 ? "Eintrag" : "Einträge"} gezeigt${more ? "; es gibt weitere" : ""}.`,
      queueWhat: (q, at) => `${plaetze(q)} · eingetragen ${at}`,
      queueWaiting: (n) => (n ? `wartet, Nummer ${n}` : "wartet"),
      queueOffered: (d) => `angeboten, bis ${d}`,
      queueReserved: "angenommen, reserviert",
      queueLeft: "verlassen",
      queueExpired: "Angebot abgelaufen",
      queueUnknown: "Stand nicht bekannt",
    },
  });

  // FIELDS are the members of a workshop the editor changes: its input,
  // its label's text key, the kind of value and whether null clears it.
  const FIELDS = [
    { name: "title", input: "f-title", label: "fTitle", kind: "text", clearable: false },
    { name: "capacity", input: "f-capacity", label: "fCapacity", kind: "int", clearable: false },
    { name: "max_quantity", input: "f-max-quantity", label: "fMaxQuantity", kind: "int", clearable: false },
    { name: "max_per_person", input: "f-max-per-person", label: "fMaxPerPerson", kind: "int", clearable: true },
    { name: "offer_ttl_seconds", input: "f-offer-ttl", label: "fOfferTTL", kind: "int", clearable: true },
    { name: "location", input: "f-location", label: "fLocation", kind: "text", clearable: true },
    { name: "description", input: "f-description", label: "fDescription", kind: "text", clearable: true },
    { name: "time_zone", input: "f-time-zone", label: "fTimeZone", kind: "zone", clearable: true },
    { name: "starts_at", input: "f-starts", label: "fStarts", kind: "time", clearable: true },
    { name: "ends_at", input: "f-ends", label: "fEnds", kind: "time", clearable: true },
    { name: "registration_opens_at", input: "f-opens", label: "fOpens", kind: "time", clearable: true },
    { name: "registration_closes_at", input: "f-closes", label: "fCloses", kind: "time", clearable: true },
  ];

  const $ = (id) => document.getElementById(id);
  const el = {
    actor: $("actor"), lang: $("lang"), signOut: $("sign-out"), pageError: $("page-error"),
    signin: $("signin"), signinWhy: $("signin-why"),
    pending: $("pending"), pendingList: $("pending-list"),
    workshops: $("workshops"), newWorkshop: $("new-workshop"), reload: $("reload"), listStatus: $("list-status"), list: $("workshop-list"),
    editor: $("editor"), editorTitle: $("editor-title"), form: $("editor-form"), fieldId: $("field-id"), id: $("f-id"),
    zone: $("f-time-zone"), save: $("save"), closeEditor: $("close-editor"), editorStatus: $("editor-status"),
    stale: $("stale"), staleText: $("stale-text"), staleList: $("stale-list"), staleRebase: $("stale-rebase"), staleDiscard: $("stale-discard"),
    attendees: $("attendees"), attendeesTitle: $("attendees-title"), attendeesSummary: $("attendees-summary"),
    download: $("download-csv"), closeAttendees: $("close-attendees"), attendeesStatus: $("attendees-status"),
    attendeeList: $("attendee-list"), more: $("attendees-more"),
    queue: $("queue"), queueTitle: $("queue-title"), queueSummary: $("queue-summary"), closeQueue: $("close-queue"),
    queueStatus: $("queue-status"), queueList: $("queue-list"), queueMore: $("queue-more"),
  };

  const state = {
    lang: COMMON.chooseLanguage(),
    actor: null,
    admin: false,
    workshops: [],
    listLoaded: false,
    listFailed: false,
    ops: {}, // The actor's open intents, by slot.
    tries: {}, // slot → "unclear" or "signIn": sent on this page, answered without a verdict.
    results: {}, // slot → message of the latest settled outcome.
    sending: null, // The slot of the request on its way.
    confirm: null, // "delete:<id>" or "cancel:<reservation id>" while its confirmation is asked.
    editor: null, // {mode, id, base, stale, message}
    att: null, // {workshop, items, next, loading, failed, message}
    queue: null, // The waiting list shown: {workshop, view, items, next, loading, failed}
    pageError: null,
  };

  function t(key, ...args) {
    const v = TEXT[state.lang][key];
    return typeof v === "function" ? v(...args) : v;
  }

  const titleOf = (id) => {
    const w = state.workshops.find((x) => x.id === id);
    return w ? w.title : id;
  };

  // Intents. Every storage access may throw; a throw on keeping an intent
  // means it is not sent.
  const slotOf = (op) => (op.kind === "cancel" ? "r:" + op.target : "w:" + op.workshop);

  function loadOps(actor) {
    return COMMON.loadKept(OPS_PREFIX + actor, (slot, op) => KINDS.includes(op.kind) && typeof op.id === "string" && op.actor === actor &&
      typeof op.workshop === "string" && WORKSHOP_ID.test(op.workshop) && slot === slotOf(op) &&
      (op.kind !== "cancel" || (typeof op.target === "string" && RESERVATION_ID.test(op.target))));
  }

  function storeOps(ops) {
    sessionStorage.setItem(OPS_PREFIX + state.actor, JSON.stringify(ops));
    state.ops = ops;
  }

  function keepOp(op) {
    storeOps(Object.assign({}, state.ops, { [slotOf(op)]: op }));
  }

  function dropOp(slot) {
    const ops = Object.assign({}, state.ops);
    delete ops[slot];
    try {
      storeOps(ops);
    } catch (e) {
      state.ops = ops; // Settled all the same; the kept copy is only offered again.
    }
  }

  const workshopPath = (id) => "/api/v1/workshops/" + encodeURIComponent(id);
  const isWorkshop = (w) => w && typeof w === "object" && typeof w.id === "string" && Number.isInteger(w.version) && Number.isInteger(w.capacity);
  const problemDetail = (r) => (r.body && typeof r.body.detail === "string" ? r.body.detail : "HTTP " + r.status);
  const problemCode = (r) => (r.body && typeof r.body.code === "string" ? r.body.code : "");

  // Time zones. zoneOffset returns how far the wall clock of zone is ahead
  // of UTC at the instant ms.
  const partFormats = new Map();
  function wallParts(ms, zone) {
    let f = partFormats.get(zone);
    if (!f) {
      f = new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
      partFormats.set(zone, f);
    }
    const p = {};
    for (const x of f.formatToParts(new Date(ms))) p[x.type] = x.value;
    return { y: Number(p.year), mo: Number(p.month), d: Number(p.day), h: Number(p.hour), mi: Number(p.minute), s: Number(p.second) };
  }

  function zoneOffset(ms, zone) {
    const p = wallParts(ms, zone);
    return Date.UTC(p.y, p.mo - 1, p.d, p.h, p.mi, p.s) - Math.floor(ms / 1000) * 1000;
  }

  const two = (n) => String(n).padStart(2, "0");

  // toWall returns the datetime-local value of the instant ms in zone.
  function toWall(ms, zone) {
    const p = wallParts(ms, zone);
    return `${String(p.y).padStart(4, "0")}-${two(p.mo)}-${two(p.d)}T${two(p.h)}:${two(p.mi)}` + (p.s ? ":" + two(p.s) : "");
  }

  // fromWall returns the instant that the datetime-local value wall names
  // in zone, NaN for no value and null for a wall time the zone skips
  // (when its clocks are put forward). Of a wall time the zone has twice
  // (when they are put back), the later is taken.
  function fromWall(wall, zone) {
    const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(wall);
    if (!m) return NaN;
    const asUTC = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6] || 0));
    let ms = asUTC - zoneOffset(asUTC, zone);
    ms = asUTC - zoneOffset(ms, zone);
    const back = toWall(ms, zone);
    return back === wall || back === wall.replace(/:00$/, "") || back + ":00" === wall ? ms : null;
  }

  // rfc3339 writes the instant ms with the offset zone has then.
  function rfc3339(ms, zone) {
    const off = Math.round(zoneOffset(ms, zone) / 60000);
    const sign = off < 0 ? "-" : "+";
    const wall = toWall(ms, zone);
    return (wall.length === 16 ? wall + ":00" : wall) + sign + two(Math.floor(Math.abs(off) / 60)) + ":" + two(Math.abs(off) % 60);
  }

  const zoneOf = (w) => (w && typeof w.time_zone === "string" && w.time_zone !== "" ? w.time_zone : "UTC");

  const dateFormat = (zone) => COMMON.dateFormat(state.lang, zone);

  // canonical returns a workshop's members that the editor changes, each
  // as a value to compare: text, a whole number, an instant in ms, or null
  // for one not set.
  function canonical(w) {
    const c = {};
    for (const f of FIELDS) {
      const v = w[f.name];
      if (f.kind === "time") {
        const ms = typeof v === "string" ? Date.parse(v) : NaN;
        c[f.name] = Number.isNaN(ms) ? null : ms;
      } else if (f.kind === "int") {
        c[f.name] = Number.isInteger(v) && v !== 0 ? v : null;
      } else {
        c[f.name] = typeof v === "string" && v !== "" ? v : null;
      }
    }
    return c;
  }

  // shownValue writes a canonical value for the stale-edit view.
  function shownValue(f, v, zone) {
    if (v === null) return t("empty");
    if (f.kind === "time") return dateFormat(zone).format(new Date(v));
    return String(v);
  }

  // formStrings returns what the editor's inputs show of a workshop (or
  // of a new one, w null), by input id.
  function formStrings(w) {
    const zone = w ? zoneOf(w) : "";
    const out = {};
    for (const f of FIELDS) {
      const v = w ? w[f.name] : undefined;
      if (f.kind === "time") {
        const ms = typeof v === "string" ? Date.parse(v) : NaN;
        out[f.input] = Number.isNaN(ms) ? "" : toWall(ms, zone || "UTC");
      } else if (f.kind === "zone") {
        out[f.input] = w ? (typeof v === "string" ? v : "") : browserZone();
      } else {
        out[f.input] = v === undefined || v === null || (f.kind === "int" && v === 0 && f.clearable) ? "" : String(v);
      }
    }
    return out;
  }

  // fillForm writes a workshop (or a new one, w null) into the editor.
  function fillForm(w) {
    for (const [id, v] of Object.entries(formStrings(w))) {
      if (id === el.zone.id) ensureZoneOption(v);
      $(id).value = v;
    }
  }

  function browserZone() {
    try {
      return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
    } catch (e) {
      return "UTC";
    }
  }

  function fillZones() {
    let zones = [];
    try {
      zones = Intl.supportedValuesOf("timeZone");
    } catch (e) {
      zones = [];
    }
    if (!zones.includes("UTC")) zones = zones.concat("UTC");
    const none = document.createElement("option");
    none.value = "";
    none.dataset.text = "noZone";
    el.zone.append(none);
    for (const z of zones.sort()) {
      const o = document.createElement("option");
      o.value = o.textContent = z;
      el.zone.append(o);
    }
  }

  function ensureZoneOption(z) {
    if (z === "" || [...el.zone.options].some((o) => o.value === z)) return;
    const o = document.createElement("option");
    o.value = o.textContent = z;
    el.zone.append(o);
  }

  // readForm returns the editor's values as canonical values, or
  // {error: [textKey, …]} for the first one that is not a value.
  function readForm() {
    const c = {};
    const zone = el.zone.value || "UTC";
    for (const f of FIELDS) {
      const raw = $(f.input).value;
      const label = t(f.label);
      if (f.kind === "time") {
        if (raw === "") {
          c[f.name] = null;
          continue;
        }
        const ms = fromWall(raw, zone);
        if (ms === null) return { error: ["noSuchTime", label, zone], input: f.input };
        if (Number.isNaN(ms)) return { error: ["badTime", label], input: f.input };
        c[f.name] = ms;
      } else if (f.kind === "int") {
        const s = raw.trim();
        if (s === "" && (f.clearable || state.editor.mode === "create")) {
          c[f.name] = null;
          continue;
        }
        if (!/^\d{1,10}$/.test(s)) return { error: [s === "" ? "required" : "badNumber", label], input: f.input };
        c[f.name] = Number(s);
      } else {
        const s = f.kind === "text" && f.name !== "description" ? raw.trim() : raw;
        if (s === "" && !f.clearable && state.editor.mode === "edit") return { error: ["required", label], input: f.input };
        c[f.name] = s === "" ? null : s;
      }
    }
    return { values: c };
  }

  // member returns the JSON value of a canonical value of field f.
  function member(f, v, zone) {
    if (v === null) return null;
    return f.kind === "time" ? rfc3339(v, zone) : v;
  }

  // hasValues reports whether workshop w has every value body asks for.
  function hasValues(w, body) {
    const c = canonical(w);
    for (const [name, v] of Object.entries(body)) {
      const f = FIELDS.find((x) => x.name === name);
      if (!f) {
        if (name === "hidden" ? Boolean(w.hidden) !== v : w[name] !== v) return false;
        continue;
      }
      const want = v === null ? null : f.kind === "time" ? Date.parse(v) : v;
      if (c[name] !== want) return false;
    }
    return true;
  }

  async function start() {
    el.lang.addEventListener("click", switchLanguage);
    el.signOut.addEventListener("click", signOut);
    el.newWorkshop.addEventListener("click", () => openEditor(null));
    el.reload.addEventListener("click", () => loadWorkshops().then(render));
    el.list.addEventListener("click", onListClick);
    el.pendingList.addEventListener("click", onPendingClick);
    el.form.addEventListener("submit", onSave);
    el.closeEditor.addEventListener("click", closeEditor);
    el.staleRebase.addEventListener("click", onRebase);
    el.staleDiscard.addEventListener("click", onDiscard);
    el.title = $("f-title");
    el.title.addEventListener("input", suggestId);
    el.id.addEventListener("input", () => { el.id.dataset.touched = "1"; });
    // A title or a place is one line: Enter saves, as in an input, and
    // a line break pasted in becomes a space.
    for (const one of document.querySelectorAll("textarea.oneline")) {
      one.addEventListener("keydown", (e) => {
        if (e.key === "Enter") {
          e.preventDefault();
          el.form.requestSubmit();
        }
      });
      one.addEventListener("input", () => {
        if (/[\r\n]/.test(one.value)) one.value = one.value.replace(/[\r\n]+/g, " ");
      });
    }
    el.download.addEventListener("click", downloadCSV);
    el.closeAttendees.addEventListener("click", () => closeList("att"));
    el.more.addEventListener("click", () => loadList("att", false));
    el.attendeeList.addEventListener("click", onAttendeeClick);
    el.closeQueue.addEventListener("click", () => closeList("queue"));
    el.queueMore.addEventListener("click", () => loadList("queue", false));
    fillZones();
    render();

    COMMON.loadSession();
    const who = await COMMON.whoami();
    if (who && !who.signedIn) {
      showSignIn(null);
      return;
    }
    if (!who) {
      state.pageError = ["unreachable"];
      render();
      return;
    }
    state.actor = who.actor;
    state.admin = who.admin;
    if (!state.admin) {
      showSignIn(state.actor);
      return;
    }
    try {
      state.ops = loadOps(state.actor);
    } catch (e) {
      state.pageError = ["noStorage"];
    }
    el.workshops.hidden = false;
    await loadWorkshops();
    render();
  }

  function showSignIn(actor) {
    el.signin.hidden = false;
    el.signinWhy.dataset.actor = actor || "";
    render();
  }

  function signOut() {
    return COMMON.signOut("/admin");
  }

  function switchLanguage() {
    state.lang = COMMON.otherLanguage(state.lang);
    render();
  }

  async function loadWorkshops() {
    const r = await request("GET", "/api/v1/workshops?include_hidden=true");
    if (r.status === 200 && r.body && Array.isArray(r.body.workshops)) {
      state.workshops = r.body.workshops.filter(isWorkshop);
      state.listLoaded = true;
      state.listFailed = false;
    } else {
      state.listFailed = true;
    }
    for (const shown of [state.att, state.queue]) {
      const w = shown && state.workshops.find((x) => x.id === shown.workshop);
      if (w) shown.view = w;
    }
  }

  // suggestId fills a new workshop's id from its title until the organizer
  // types one.
  function suggestId() {
    if (!state.editor || state.editor.mode !== "create" || el.id.dataset.touched) return;
    el.id.value = el.title.value.toLowerCase().normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
      .replace(/[^a-z0-9]+/g, "-").replace(/^[^a-z]+/, "").slice(0, 41).replace(/-+$/, "");
  }

  // openEditor opens the form for a new workshop (w null) or for w, read
  // again first so that its version is the latest.
  async function openEditor(w) {
    if (w) {
      const r = await request("GET", workshopPath(w.id));
      if (r.status === 200 && isWorkshop(r.body)) w = r.body;
    }
    state.editor = { mode: w ? "edit" : "create", id: w ? w.id : "", base: w, stale: null, message: null };
    fillForm(w);
    el.id.value = "";
    delete el.id.dataset.touched;
    render();
    el.editor.scrollIntoView({ block: "start" });
    (w ? $("f-title") : el.id).focus();
  }

  function closeEditor() {
    const slot = state.editor && editorSlot();
    if (slot && state.sending === slot) return;
    state.editor = null;
    render();
    el.newWorkshop.focus();
  }

  const editorSlot = () => (state.editor.mode === "create" ? (WORKSHOP_ID.test(el.id.value) ? "w:" + el.id.value : null) : "w:" + state.editor.id);

  // onSave starts (or retries) the editor's intent: a creation or a
  // change of the members that differ from the workshop as loaded.
  async function onSave(event) {
    event.preventDefault();
    if (state.sending) return;
    const ed = state.editor;
    const open = ed.slot && state.ops[ed.slot];
    if (open) {
      await send(ed.slot);
      return;
    }
    const read = readForm();
    if (read.error) {
      ed.message = read.error;
      render();
      $(read.input).focus();
      return;
    }
    const zone = read.values.time_zone || "UTC";
    let op;
    if (ed.mode === "create") {
      const id = el.id.value;
      if (!WORKSHOP_ID.test(id)) {
        ed.message = ["badId"];
        render();
        el.id.focus();
        return;
      }
      const body = {};
      for (const f of FIELDS) {
        const v = read.values[f.name];
        if (v !== null) body[f.name] = member(f, v, zone);
      }
      if (!("capacity" in body)) {
        ed.message = ["required", t("fCapacity")];
        render();
        $("f-capacity").focus();
        return;
      }
      op = { kind: "create", id: COMMON.newKey(), workshop: id, title: body.title || id, body, actor: state.actor };
    } else {
      const base = canonical(ed.base);
      const body = {};
      for (const f of FIELDS) {
        const v = read.values[f.name];
        if (v !== base[f.name] || (f.kind === "time" && v !== null && "time_zone" in body)) body[f.name] = member(f, v, zone);
      }
      if (Object.keys(body).length === 0) {
        ed.message = ["noChange"];
        render();
        return;
      }
      op = { kind: "patch", id: COMMON.newKey(), workshop: ed.id, title: ed.base.title, body, if_match: ed.base.version, base: ed.base, actor: state.actor };
    }
    try {
      keepOp(op); // Before the first send, or not at all.
    } catch (e) {
      ed.message = ["noStorage"];
      render();
      return;
    }
    ed.slot = slotOf(op);
    ed.stale = null;
    await send(ed.slot);
  }

  // onListClick handles the buttons of the workshop list.
  async function onListClick(event) {
    const b = event.target.closest("button[data-act]");
    if (!b || state.sending) return;
    const w = state.workshops.find((x) => x.id === b.dataset.workshop);
    if (!w) return;
    const act = b.dataset.act;
    if (act === "edit") {
      await openEditor(w);
    } else if (act === "attendees") {
      openList("att", w);
    } else if (act === "waitlist") {
      openList("queue", w);
    } else if (act === "delete") {
      state.confirm = "delete:" + w.id;
      render();
      $("delete-yes-" + w.id).focus();
    } else if (act === "keep") {
      state.confirm = null;
      render();
      $("delete-" + w.id).focus();
    } else if (act === "delete-yes") {
      state.confirm = null;
      await startOp({ kind: "delete", id: COMMON.newKey(), workshop: w.id, title: w.title, if_match: w.version, actor: state.actor }, "item-" + w.id);
    } else if (act === "hide") {
      const hidden = !w.hidden;
      await startOp({ kind: "patch", id: COMMON.newKey(), workshop: w.id, title: w.title, body: { hidden }, if_match: w.version, base: w, actor: state.actor }, "hide-" + w.id);
    }
  }

  async function startOp(op, focus) {
    const slot = slotOf(op);
    if (state.ops[slot]) return; // An open request on it needs its answer first.
    try {
      keepOp(op);
    } catch (e) {
      state.results[slot] = ["noStorage"];
      render();
      return;
    }
    await send(slot, focus);
  }

  function onPendingClick(event) {
    const b = event.target.closest("button[data-slot]");
    if (b && !state.sending) send(b.dataset.slot, b.id);
  }

  // send sends the open intent of slot (again) and settles it when the
  // answer says for sure what happened.
  async function send(slot, focus) {
    const op = state.ops[slot];
    if (!op || state.sending) return;
    state.sending = slot;
    delete state.results[slot];
    if (state.editor && state.editor.slot === slot) state.editor.message = null;
    render();
    let verdict;
    try {
      verdict = await PERFORM[op.kind](op);
    } catch (e) {
      verdict = null;
    }
    state.sending = null;
    if (verdict && verdict.unclear) {
      state.tries[slot] = verdict.unclear;
    } else if (verdict) {
      delete state.tries[slot];
      dropOp(slot);
      settle(op, verdict);
    } else {
      state.tries[slot] = "unclear";
    }
    await loadWorkshops();
    if (state.att && (op.kind === "cancel" || op.workshop === state.att.workshop) && verdict && !verdict.unclear) {
      await loadList("att", true);
    }
    // A cancellation frees places, which go to the waiting list as offers.
    if (state.queue && op.workshop === state.queue.workshop && verdict && !verdict.unclear) {
      await loadList("queue", true);
    }
    render();
    // Keep keyboard users where the answer is: on the control they used,
    // else on the line that says what happened.
    const ed = state.editor;
    if (ed && ed.slot === slot) {
      el.save.focus();
    } else if (focus && $(focus)) {
      $(focus).focus();
    } else if (ed && ed.id === op.workshop && op.kind === "patch") {
      (ed.stale ? el.staleRebase : el.save).focus();
    } else if (op.kind === "cancel" && state.att) {
      el.attendeesStatus.focus();
    } else {
      el.listStatus.focus();
    }
  }

  // settle shows the outcome of a settled intent where it belongs.
  function settle(op, v) {
    const slot = slotOf(op);
    delete state.results[slot]; // So that the latest outcome comes last.
    const ed = state.editor;
    const inEditor = ed && ed.slot === slot;
    if (inEditor) ed.slot = null;
    if (v.stale && op.kind === "patch" && !("hidden" in op.body && Object.keys(op.body).length === 1)) {
      // The stale-edit view: the organizer's values over what they were
      // loaded from, next to the workshop as it is now.
      if (!inEditor) {
        state.editor = { mode: "edit", id: op.workshop, base: op.base, message: null };
      }
      const mine = Object.assign({}, op.base, op.body);
      fillForm(mine);
      state.editor.base = op.base;
      state.editor.stale = v.current;
      state.editor.message = null;
      return;
    }
    const message = v.message;
    if (inEditor || (!ed && (op.kind === "create" || op.kind === "patch") && !("hidden" in (op.body || {})))) {
      if (v.done && op.kind !== "delete") {
        state.editor = null;
        state.results[slot] = message;
      } else if (inEditor) {
        ed.message = message;
      } else {
        state.results[slot] = message;
      }
      return;
    }
    state.results[slot] = message;
  }

  // PERFORM sends each kind of intent and returns its verdict: {message,
  // done} once settled, {stale, current} for a change refused as stale,
  // {unclear: "unclear" | "signIn"} when the answer is no verdict.
  const PERFORM = {
    async create(op) {
      const w = { title: op.title };
      const first = await request("GET", workshopPath(op.workshop));
      if (first.status === 200 && isWorkshop(first.body)) {
        if (op.sent && hasValues(first.body, op.body)) return { done: true, message: ["createdBefore", first.body.title] };
        return { message: [op.sent ? "existsOther" : "exists", op.workshop] };
      }
      if (first.status !== 404) return { unclear: first.status === 401 ? "signIn" : "unclear" };
      op.sent = true;
      keepOp(op);
      const r = await request("PUT", workshopPath(op.workshop), { "Content-Type": "application/json" }, JSON.stringify(op.body));
      if ((r.status === 201 || r.status === 200) && isWorkshop(r.body)) return { done: true, message: ["created", r.body.title] };
      if (r.status === 422 || r.status === 409) return { message: ["refused", problemDetail(r)] };
      return { unclear: r.status === 401 ? "signIn" : "unclear" };
    },
    async patch(op) {
      const r = await request("PATCH", workshopPath(op.workshop),
        { "Content-Type": "application/merge-patch+json", "If-Match": `"${op.if_match}"` }, JSON.stringify(op.body));
      const hiding = "hidden" in op.body && Object.keys(op.body).length === 1;
      const doneMessage = (title, before) => (hiding ? [op.body.hidden ? "hiddenDone" : "shownDone", title] : [before ? "savedBefore" : "saved", title]);
      if (r.status === 200 && isWorkshop(r.body)) return { done: true, message: doneMessage(r.body.title, false) };
      if (r.status === 404 && problemCode(r) === "unknown_workshop") return { message: ["gone", op.title] };
      if (r.status === 412) {
        const cur = await request("GET", workshopPath(op.workshop));
        if (cur.status === 404) return { message: ["gone", op.title] };
        if (cur.status !== 200 || !isWorkshop(cur.body)) return { unclear: cur.status === 401 ? "signIn" : "unclear" };
        if (hasValues(cur.body, op.body)) return { done: true, message: doneMessage(cur.body.title, true) };
        return hiding ? { message: ["staleList", op.title] } : { stale: true, current: cur.body };
      }
      if (r.status === 422 || r.status === 409) return { message: ["refused", problemDetail(r)] };
      return { unclear: r.status === 401 ? "signIn" : "unclear" };
    },
    async delete(op) {
      const r = await request("DELETE", workshopPath(op.workshop), { "If-Match": `"${op.if_match}"` });
      if (r.status === 204 || (r.status === 404 && problemCode(r) === "unknown_workshop")) return { done: true, message: ["deleted", op.title] };
      if (r.status === 409 && problemCode(r) === "workshop_in_use") return { message: ["inUse", op.title] };
      if (r.status === 412) {
        const cur = await request("GET", workshopPath(op.workshop));
        if (cur.status === 404) return { done: true, message: ["deleted", op.title] };
        if (cur.status === 200) return { message: ["staleDelete", op.title] };
      }
      if (r.status === 409 || r.status === 422) return { message: ["refused", problemDetail(r)] };
      return { unclear: r.status === 401 ? "signIn" : "unclear" };
    },
    async cancel(op) {
      const r = await request("POST", "/api/v1/reservations/" + encodeURIComponent(op.target) + "/cancel", { "Idempotency-Key": op.id });
      const o = COMMON.opAuthoritative(r, { kind: "cancel", target: op.target });
      if (o) return { done: true, message: o.status === "cancelled" ? ["cancelled", op.quantity, op.who] : ["alreadyCancelled"] };
      if (r.status === 404 && problemCode(r) === "unknown_reservation") return { message: ["noReservation"] };
      return { unclear: r.status === 401 ? "signIn" : "unclear" };
    },
  };

  // The stale-edit view's two ways on.
  // onRebase puts the organizer's changes — the inputs that differ from
  // the version the form was loaded at — over the current version: the
  // other inputs take the current values, so that the next save sends
  // only the organizer's own changes, with the current version's If-Match.
  function onRebase() {
    const ed = state.editor;
    if (!ed || !ed.stale) return;
    const loaded = formStrings(ed.base), now = formStrings(ed.stale);
    for (const [id, v] of Object.entries(now)) {
      if ($(id).value === loaded[id]) {
        if (id === el.zone.id) ensureZoneOption(v);
        $(id).value = v;
      }
    }
    ed.base = ed.stale;
    ed.stale = null;
    ed.message = ["staleRebased"];
    render();
    el.save.focus();
  }

  function onDiscard() {
    const ed = state.editor;
    if (!ed || !ed.stale) return;
    ed.base = ed.stale;
    ed.stale = null;
    ed.message = null;
    fillForm(ed.base);
    render();
    $("f-title").focus();
  }

  // LISTS are the lists a workshop opens below the workshops, each in a
  // section of its own, a page of PAGE_SIZE at a time: its attendees (its
  // active reservations) and its waiting list (every entry, in the order
  // they joined). Each names the member of state that holds it while it
  // is open ({workshop, view, items, next, loading, failed, message}), its
  // section and title, the prefix of the workshop's button that opens it,
  // its route under the workshop with its query, the member of the answer
  // that lists its items and which of them are well-formed.
  const LISTS = {
    att: {
      section: "attendees", title: "attendeesTitle", opener: "attendees-", route: "/attendees?status=active&", member: "attendees",
      ok: (a) => typeof a.reservation_id === "string" && RESERVATION_ID.test(a.reservation_id) &&
        typeof a.actor === "string" && Number.isInteger(a.quantity),
    },
    queue: {
      section: "queue", title: "queueTitle", opener: "waitlist-", route: "/waitlist?", member: "entries",
      ok: (e) => typeof e.entry_id === "string" && RESERVATION_ID.test(e.entry_id) &&
        typeof e.actor === "string" && Number.isInteger(e.quantity) && typeof e.state === "string",
    },
  };

  function openList(name, w) {
    state[name] = { workshop: w.id, view: w, items: [], next: null, loading: false, failed: false, message: null };
    state.confirm = null;
    render();
    el[LISTS[name].section].scrollIntoView({ block: "start" });
    el[LISTS[name].title].focus();
    loadList(name, true);
  }

  function closeList(name) {
    const id = state[name] && state[name].workshop;
    state[name] = null;
    render();
    const b = id && $(LISTS[name].opener + id);
    (b || el.newWorkshop).focus();
  }

  // loadList reads list name's first page again (fresh) or its next one.
  async function loadList(name, fresh) {
    const shown = state[name];
    if (!shown || shown.loading) return;
    const list = LISTS[name];
    shown.loading = true;
    render();
    const cursor = fresh ? "" : "&cursor=" + encodeURIComponent(shown.next || "");
    const r = await request("GET", workshopPath(shown.workshop) + list.route + "limit=" + PAGE_SIZE + cursor);
    if (state[name] !== shown) return;
    shown.loading = false;
    if (r.status === 200 && r.body && Array.isArray(r.body[list.member])) {
      const items = r.body[list.member].filter((x) => x && list.ok(x));
      shown.items = fresh ? items : shown.items.concat(items);
      shown.next = typeof r.body.next_cursor === "string" && r.body.next_cursor !== "" ? r.body.next_cursor : null;
      shown.failed = false;
    } else {
      shown.failed = true;
    }
    render();
  }

  async function onAttendeeClick(event) {
    const b = event.target.closest("button[data-act]");
    if (!b || state.sending || !state.att) return;
    const a = state.att.items.find((x) => x.reservation_id === b.dataset.id);
    if (!a) return;
    const act = b.dataset.act;
    if (act === "cancel") {
      state.confirm = "cancel:" + a.reservation_id;
      render();
      $("cancel-yes-" + a.reservation_id).focus();
    } else if (act === "keep") {
      state.confirm = null;
      render();
      $("cancel-" + a.reservation_id).focus();
    } else if (act === "cancel-yes") {
      state.confirm = null;
      await startOp({ kind: "cancel", id: COMMON.newKey(), workshop: state.att.workshop, title: titleOf(state.att.workshop),
        target: a.reservation_id, quantity: a.quantity, who: a.actor, actor: state.actor }, "attendee-" + a.reservation_id);
    }
  }

  // The waiting list of a workshop: its entries in the order they joined,
  // each with its position while it waits, who, how many places, its state
  // and, while it is offered places, the offer's deadline.
  const DEFAULT_OFFER_TTL = 86400; // The daemon's time to accept an offer when a workshop sets none.
  const waitingOf = (w) => (Number.isInteger(w.waiting) ? w.waiting : 0);
  const offerTTLOf = (w) => (Number.isInteger(w.offer_ttl_seconds) && w.offer_ttl_seconds > 0 ? w.offer_ttl_seconds : DEFAULT_OFFER_TTL);

  // duration writes s seconds in the largest unit that divides them.
  function duration(s) {
    for (const [unit, n] of [["days", 86400], ["hours", 3600], ["minutes", 60]]) {
      if (s % n === 0) return t(unit, s / n);
    }
    return t("seconds", s);
  }

  // queueState returns what an entry's state says, by its state now.
  function queueState(e, zone) {
    switch (e.state) {
      case "waiting": return t("queueWaiting", Number.isInteger(e.position) ? e.position : 0);
      case "offered": {
        const until = Date.parse(e.expires_at || "");
        return t("queueOffered", Number.isNaN(until) ? "" : dateFormat(zone).format(new Date(until)));
      }
      case "reserved": return t("queueReserved");
      case "left": return t("queueLeft");
      case "expired": return t("queueExpired");
      default: return t("queueUnknown");
    }
  }

  function renderQueue() {
    const q = state.queue;
    el.queue.hidden = !q;
    if (!q) return;
    const w = q.view;
    el.queueTitle.textContent = t("queueTitle", w.title);
    el.queueSummary.textContent = t("queueSummary", waitingOf(w), duration(offerTTLOf(w)));
    const zone = zoneOf(w);
    el.queueList.replaceChildren(...q.items.map((e) => {
      const who = typeof e.display_name === "string" && e.display_name !== "" ? `${e.display_name} (${e.actor})` : e.actor;
      const at = Date.parse(e.created_at || "");
      return node("li", { id: "queue-" + e.entry_id, "data-id": e.entry_id, "data-actor": e.actor, "data-state": e.state },
        node("p", { class: "item-who", text: who }),
        node("p", { class: "item-what", text: t("queueWhat", e.quantity, Number.isNaN(at) ? "" : dateFormat(zone).format(new Date(at))) + " · " + queueState(e, zone) }));
    }));
    el.queueStatus.textContent = q.failed ? t("queueFailed") : q.loading && q.items.length === 0 ? t("queueLoading") :
      q.items.length === 0 ? t("queueEmpty") : t("queueCount", q.items.length, Boolean(q.next));
    el.queueStatus.dataset.kind = q.failed ? "queueFailed" : "";
    el.queueMore.hidden = !q.next;
    el.queueMore.disabled = q.loading;
  }

  // downloadCSV fetches the attendee list as CSV with this tab's session
  // (a plain link cannot carry it) and saves it under the name the daemon
  // gives it.
  async function downloadCSV() {
    const att = state.att;
    if (!att || att.downloading) return;
    att.downloading = true;
    att.message = ["downloading"];
    render();
    const r = await request("GET", workshopPath(att.workshop) + "/attendees?status=active", { Accept: "text/csv" });
    att.downloading = false;
    const type = r.headers.get("Content-Type") || "";
    if (r.status !== 200 || !type.startsWith("text/csv")) {
      att.message = ["downloadFailed"];
      render();
      return;
    }
    const m = /filename="?([^";]+)"?/.exec(r.headers.get("Content-Disposition") || "");
    const name = m ? m[1] : att.workshop + "-attendees.csv";
    const url = URL.createObjectURL(new Blob([r.text], { type: "text/csv;charset=utf-8" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = name;
    a.hidden = true;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    att.message = ["downloaded", name];
    render();
  }

  // Rendering. Lists are built anew on every render; the element that had
  // the focus is found again by its id.
  function node(tag, attrs, ...children) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") n.textContent = v;
      else if (k.startsWith("data-")) n.dataset[k.slice(5).replace(/-(\w)/g, (_, c) => c.toUpperCase())] = v;
      else if (k === "class") n.className = v;
      else n.setAttribute(k, v === true ? "" : v);
    }
    n.append(...children.filter(Boolean));
    return n;
  }

  function button(id, text, act, data, secondary) {
    return node("button", Object.assign({ type: "button", id, class: secondary || "secondary", "data-act": act, text, disabled: Boolean(state.sending) }, data));
  }

  const messageText = (m) => (m ? t(...m) : "");

  // opMessage is what the page says of an open intent.
  function opMessage(slot) {
    if (state.sending === slot) return ["sending"];
    const tried = state.tries[slot];
    return [tried === "signIn" ? "unclearSignIn" : tried === "unclear" ? "unclear" : "resumed"];
  }

  function opTitle(op) {
    if (op.kind === "create") return t("opCreate", op.title);
    if (op.kind === "delete") return t("opDelete", op.title);
    if (op.kind === "cancel") return t("opCancel", op.quantity, op.who, op.title);
    if ("hidden" in op.body && Object.keys(op.body).length === 1) return t(op.body.hidden ? "opHide" : "opShow", op.title);
    return t("opPatch", op.title);
  }

  function dl(rows) {
    return node("dl", {}, ...rows.filter((r) => r[1] !== "").map(([k, v]) => node("div", {}, node("dt", { text: k }), node("dd", { text: v }))));
  }

  function renderWorkshops() {
    const items = [];
    for (const w of state.workshops) {
      const slot = "w:" + w.id;
      const open = state.ops[slot];
      const confirming = state.confirm === "delete:" + w.id;
      const reg = { open: "regOpen", not_open: "regNotOpen", closed: "regClosed" }[w.registration];
      const li = node("li", { id: "item-" + w.id, tabindex: "-1", "data-hidden": w.hidden ? "true" : "false" },
        node("h3", { text: w.title }),
        dl([
          [t("id"), w.id],
          [t("when"), COMMON.whenText(state.lang, w)],
          [t("where"), typeof w.location === "string" ? w.location : ""],
          [t("placesLabel"), t("placesText", w)],
          [t("perRequest"), t("atMost", w.max_quantity)],
          [t("perPerson"), Number.isInteger(w.max_per_person) && w.max_per_person > 0 ? t("atMost", w.max_per_person) : ""],
          [t("waitlistLabel"), t("waitlistText", waitingOf(w), duration(offerTTLOf(w)))],
          [t("registration"), reg ? t(reg) : ""],
          [t("shown"), w.hidden ? t("hiddenYes") : t("hiddenNo")],
        ]));
      const status = open ? opMessage(slot) : state.results[slot];
      li.append(node("p", { id: "status-" + w.id, class: "line", role: "status", text: messageText(status), "data-kind": status ? status[0] : "" }));
      if (confirming) {
        li.append(node("div", { class: "confirm" },
          node("p", { text: t("deleteConfirm", w.title) }),
          node("div", { class: "actions" },
            button("delete-yes-" + w.id, t("deleteYes"), "delete-yes", { "data-workshop": w.id }, "secondary danger"),
            button("keep-" + w.id, t("keep"), "keep", { "data-workshop": w.id }))));
      } else {
        const locked = Boolean(open);
        const acts = node("div", { class: "actions" },
          button("edit-" + w.id, t("edit"), "edit", { "data-workshop": w.id, "aria-describedby": "title-" + w.id }),
          button("attendees-" + w.id, t("attendees"), "attendees", { "data-workshop": w.id }),
          button("waitlist-" + w.id, t("waitlist"), "waitlist", { "data-workshop": w.id }),
          button("hide-" + w.id, t(w.hidden ? "show" : "hide"), "hide", { "data-workshop": w.id }),
          button("delete-" + w.id, t("del"), "delete", { "data-workshop": w.id }, "secondary danger"));
        for (const b of acts.querySelectorAll("button")) {
          b.setAttribute("aria-describedby", "title-" + w.id);
          if (locked && b.dataset.act !== "attendees" && b.dataset.act !== "waitlist") b.disabled = true;
        }
        li.append(acts);
      }
      li.querySelector("h3").id = "title-" + w.id;
      items.push(li);
    }
    el.list.replaceChildren(...items);
    const line = state.listFailed ? t("loadFailed") : !state.listLoaded ? t("loading") :
      state.workshops.length === 0 ? t("noWorkshops") : t("count", state.workshops.length);
    // The latest outcome about a workshop the list does not show (deleted,
    // or never created) is said above it.
    const unlisted = Object.entries(state.results).filter(([slot]) => slot.startsWith("w:") && !state.workshops.some((w) => "w:" + w.id === slot));
    const m = unlisted.length ? unlisted[unlisted.length - 1][1] : null;
    el.listStatus.textContent = (m ? messageText(m) + " " : "") + line;
    el.listStatus.dataset.kind = m ? m[0] : state.listFailed ? "loadFailed" : "";
  }

  function renderPending() {
    const slots = Object.keys(state.ops);
    el.pending.hidden = slots.length === 0 || !state.admin;
    el.pendingList.replaceChildren(...slots.map((slot) => {
      const op = state.ops[slot];
      const m = opMessage(slot);
      const safe = slot.replace(":", "-");
      return node("li", { id: "pending-" + safe },
        node("p", { class: "item-what", text: opTitle(op) }),
        node("p", { class: "line", role: "status", "data-kind": m[0], text: messageText(m) }),
        node("div", { class: "actions" },
          node("button", { type: "button", id: "retry-" + safe, "data-slot": slot, disabled: Boolean(state.sending),
            text: state.sending === slot ? t("sending") : t("retry") })));
    }));
  }

  function renderEditor() {
    const ed = state.editor;
    el.editor.hidden = !ed;
    if (!ed) return;
    el.fieldId.hidden = ed.mode !== "create";
    el.editorTitle.textContent = ed.mode === "create" ? t("newTitle") : t("editTitle", ed.base.title);
    const open = ed.slot && state.ops[ed.slot];
    for (const f of FIELDS) $(f.input).disabled = Boolean(open);
    el.id.disabled = Boolean(open);
    el.save.disabled = Boolean(state.sending);
    el.save.textContent = state.sending && state.sending === ed.slot ? t("sending") : open ? t("retry") : t("save");
    const m = open ? opMessage(ed.slot) : ed.message;
    el.editorStatus.textContent = messageText(m);
    el.editorStatus.dataset.kind = m ? m[0] : "";
    el.stale.hidden = !ed.stale;
    if (ed.stale) {
      el.staleText.textContent = t("staleText");
      const was = canonical(ed.base), now = canonical(ed.stale);
      const rows = [];
      for (const f of FIELDS) {
        if (was[f.name] !== now[f.name]) {
          rows.push(node("li", { "data-field": f.name, text: t("staleItem", t(f.label), shownValue(f, was[f.name], zoneOf(ed.base)), shownValue(f, now[f.name], zoneOf(ed.stale))) }));
        }
      }
      if (Boolean(ed.base.hidden) !== Boolean(ed.stale.hidden)) {
        rows.push(node("li", { "data-field": "hidden", text: t("staleItem", t("fHidden"), t(ed.base.hidden ? "yes" : "no"), t(ed.stale.hidden ? "yes" : "no")) }));
      }
      el.staleList.replaceChildren(...rows);
    }
  }

  function renderAttendees() {
    const att = state.att;
    el.attendees.hidden = !att;
    if (!att) return;
    const w = att.view;
    el.attendeesTitle.textContent = t("attendeesTitle", w.title);
    el.attendeesSummary.textContent = t("attendeesSummary", w);
    el.download.disabled = Boolean(att.downloading);
    const zone = zoneOf(w);
    const items = att.items.map((a) => {
      const slot = "r:" + a.reservation_id;
      const open = state.ops[slot];
      const who = typeof a.display_name === "string" && a.display_name !== "" ? `${a.display_name} (${a.actor})` : a.actor;
      const at = Date.parse(a.created_at || "");
      const li = node("li", { id: "attendee-" + a.reservation_id, tabindex: "-1", "data-id": a.reservation_id, "data-actor": a.actor, "data-state": a.status },
        node("p", { class: "item-who", text: who }),
        typeof a.email === "string" && a.email !== "" ? node("p", { class: "hint", text: a.email }) : null,
        node("p", { class: "item-what", text: t("attendeeWhat", a.quantity, Number.isNaN(at) ? "" : dateFormat(zone).format(new Date(at))) + " · " +
          t(a.status === "cancelled" ? "stateCancelled" : "stateActive") }));
      const status = open ? opMessage(slot) : state.results[slot];
      li.append(node("p", { class: "line", role: "status", "data-kind": status ? status[0] : "", text: messageText(status) }));
      if (state.confirm === "cancel:" + a.reservation_id) {
        li.append(node("div", { class: "confirm" },
          node("p", { text: t("cancelConfirm", a.quantity, a.actor) }),
          node("div", { class: "actions" },
            button("cancel-yes-" + a.reservation_id, t("cancelYes"), "cancel-yes", { "data-id": a.reservation_id }, "secondary danger"),
            button("keep-" + a.reservation_id, t("keep"), "keep", { "data-id": a.reservation_id }))));
      } else if (a.status === "active" && !open) {
        li.append(node("div", { class: "actions" }, button("cancel-" + a.reservation_id, t("cancel"), "cancel", { "data-id": a.reservation_id }, "secondary danger")));
      }
      return li;
    });
    // Settled cancellations of reservations no longer listed are said above the list.
    el.attendeeList.replaceChildren(...items);
    const gone = Object.entries(state.results).filter(([slot]) => slot.startsWith("r:") && !att.items.some((a) => "r:" + a.reservation_id === slot));
    const m = att.message || (gone.length ? gone[gone.length - 1][1] : null);
    const line = att.failed ? t("attendeesFailed") : att.loading && att.items.length === 0 ? t("attendeesLoading") :
      att.items.length === 0 ? t("attendeesEmpty") : t("attendeesCount", att.items.length, Boolean(att.next));
    el.attendeesStatus.textContent = (m ? messageText(m) + " " : "") + line;
    el.attendeesStatus.dataset.kind = m ? m[0] : att.failed ? "attendeesFailed" : "";
    el.more.hidden = !att.next;
    el.more.disabled = att.loading;
  }

  function render() {
    const focused = document.activeElement && document.activeElement.id;
    COMMON.renderFrame(t, state.lang, el, state.actor, state.pageError);
    el.signOut.hidden = !state.actor;
    el.signinWhy.textContent = el.signinWhy.dataset.actor ? t("whyNotAdmin", el.signinWhy.dataset.actor) : t("whySignedOut");
    if (state.admin) {
      renderPending();
      renderWorkshops();
      renderEditor();
      renderAttendees();
      renderQueue();
    }
    if (focused && document.activeElement !== $(focused) && $(focused)) $(focused).focus();
  }

  start();
})();
