// app.js is the reservation form's whole behaviour. Its one rule: an intent
// (operation key + payload + actor) is written to sessionStorage before the
// first send, every retry sends exactly that intent again, and only an
// explicit new action ("Start another reservation", "Change selection",
// or joining the waiting list after a refusal) makes a new key. Only an
// authoritative answer about the request sent (a 201 "reserved", a 202
// "waiting", a 409 refusal such as "unavailable") settles it; anything
// else, also no answer within 15 s, leaves the intent open with "outcome
// unclear — retry".
// Nothing is ever sent by itself, except that the lists are read again and
// that an answer 429 rate_limited (the daemon's rate limit: nothing was
// done) is sent again, with the same key, after its Retry-After.
//
// Intents belong to the actor who made them. The form's intent is kept
// under "reserve.intent.<actor>" and the actor's other operations under
// "reserve.ops.<actor>", so one tab that sees several sign-ins keeps each
// person's intents apart: a page signed in as one actor reads and writes
// only that actor's keys, never shows another actor's intents or name, and
// offers an actor's open intents again, with their retry, when that actor
// signs in again in the tab. Signing out with an open intent asks first,
// and keeps the intent for its actor.
//
// "Your reservations" lists the actor's own reservations and holds. Each
// cancellation of a reservation, and each confirmation or release of a
// hold, is an intent of its own with the same rules: {operation, kind,
// target, workshop, quantity, actor} is written to sessionStorage before
// the first send, every retry sends that key again, and only that kind's
// authoritative answer about that reservation or hold settles it. While an
// operation on an item is open, the item offers only its retry; the list is
// read again after every answer. Each reservation has this one cancel
// control: the form's own reservation too is cancelled from its item, and
// the form only leads there and shows the cancellation's outcome.
//
// The waiting list: when no place of the chosen workshop is free, or people
// wait for its places already, the form offers "Join the waiting list"
// instead of "Reserve". Joining is the form's intent like a reservation
// (one key, kept before the first send, retried with that key), sent with
// "waitlist": true; its answer "waiting" gives the entry and its position.
// A reservation refused as "unavailable" (too few places free for the
// quantity asked) offers "Join the waiting list for N places": a new
// intent with a key of its own, for the same places; the refused intent
// stays settled. It is not offered for more places than the workshop has
// in all, which no freed place could make up until its organizers raise
// the capacity.
// "Your waiting list" shows the actor's entries: a waiting one with its
// position and Leave; one whose turn came with the offer — a hold of the
// places, with a live countdown to its deadline — and Accept (confirm the
// hold) and Decline (leave the entry, which passes the places on). Each is
// an operation of its own with the rules of the list's other operations.
// While an entry waits or is offered places the page reads its lists again
// every few seconds, so that an offer shows up and a passed one goes.
//
// The chosen workshop's schedule (date and time in its own time zone,
// place, registration, limit per person, description) is shown when the
// daemon sends it; a workshop without it shows only its free places. The
// description is text, never HTML. A reservation refused because
// registration is not open, has closed or the person's limit is reached
// is a settled refusal like "unavailable".
//
// Signing in: a login link leads to /login?code=…, where the daemon serves
// this page only when the browser was not sent there by another site or
// port. The page takes the code out of the address bar, redeems it with
// POST /api/v1/sessions and keeps the session it gets in sessionStorage
// ("reserve.session"), which belongs to this origin (scheme, host and port)
// and this tab; every API request carries it as "Authorization: Bearer …"
// and no cookie at all (common.js keeps and sends it for both pages). A
// code anywhere but at /login is never used. "Sign out" ends the session on
// the daemon and forgets it here.
"use strict";

(function () {
  const { RESERVATION_ID, places, plaetze, request, authoritative, opAuthoritative, instant } = COMMON;
  const INTENT_PREFIX = "reserve.intent."; // + actor: the form's intent.
  const OPS_PREFIX = "reserve.ops."; // + actor: {"<kind>:<target>": operation}.
  const LOGIN_PATH = "/login";
  const LIST_LIMIT = 50;
  const WAIT_POLL_MS = 5000; // How often the lists are read while an entry waits or is offered places; see waitPoll.
  const RATE_LIMITED_SENDS = 4; // Sends of one operation while the daemon answers rate_limited (see post).
  const MAX_RATE_LIMITED_WAIT_S = 30; // The longest Retry-After the page waits before it sends again.

  const TEXT = COMMON.texts({
    en: {
      title: "Reserve a place",
      description: "Reserve places in workshops: each reservation takes effect exactly once, however often its request is sent.",
      toAdmin: "Organizer's page",
      signInTitle: "Sign in",
      signInText: "You are not signed in. On the machine that runs reserved, run this command and open the link it prints:",
      signInNothing: "Nothing is sent until you are signed in.",
      signInWith: () => `Sign in with ${state.oidcName || "your organization"}`,
      signInTextOr: "Or, on the machine that runs reserved, run this command and open the link it prints:",
      emailSignInText: "You are not signed in. Enter your email address and we will mail you a link that signs you in.",
      emailLabel: "Email address",
      emailSend: "Send me a sign-in link",
      emailSending: "Sending …",
      emailSent: (a) => `Check your mailbox: if ${a} may sign in here, a link is on its way to it. It works once, for 15 minutes; open it in this browser.`,
      emailInvalid: "Enter one email address, such as ada@example.org.",
      emailTooMany: "Links were asked for too often. Use the newest link that arrived, or try again later.",
      emailError: "The link could not be requested: the reservation service could not be reached or had a problem. Try again.",
      workshop: "Workshop",
      quantity: "Places",
      reserve: "Reserve",
      retry: "Retry",
      sending: "Sending…",
      availability: (w) => `${w.available} of ${w.capacity} places free`,
      when: "When",
      where: "Where",
      registration: "Registration",
      perPerson: "Per person",
      regOpen: "open",
      regOpenUntil: (d) => `open until ${d}`,
      regNotOpen: "not open yet",
      regOpensAt: (d) => `opens ${d}`,
      regClosed: "closed",
      maxPerPerson: (n) => `at most ${places(n)}`,
      quantityHint: (max) => `1 to ${max} places`,
      loading: "Loading workshops…",
      loadFailed: "The workshops could not be loaded. Reload the page to try again.",
      loginFailed: "This login link is not valid: it was used already, has expired (links last 5 minutes), or was copied incompletely. On the machine that runs reserved, run 'reservectl login-link' and open the new link.",
      loginError: "Signing in did not work: the reservation service could not be reached or had a problem. On the machine that runs reserved, run 'reservectl login-link' and open the new link.",
      noWorkshops: "There are no workshops to reserve yet.",
      reserved: (q, w) => `Reserved: ${places(q)} in ${w}.`,
      unavailable: (q, w) => `Unavailable: ${w} does not have ${q === 1 ? "a free place" : q + " free places"} for this reservation.`,
      registrationNotOpen: (q, w) => `Not reserved: registration for ${w} is not open yet. Nothing was reserved.`,
      registrationClosed: (q, w) => `Not reserved: registration for ${w} has closed. Nothing was reserved.`,
      limitReached: (q, w, max, already) => `Not reserved: one person may have at most ${places(max)} in ${w}, and you have ${places(already)} already.`,
      unclear: "Outcome unclear — retry. Your reservation may or may not have been made; retrying sends the same request again and cannot reserve twice.",
      unclearSignIn: "Outcome unclear — retry. Your session has ended: sign in again, then retry.",
      resumed: (q, w) => `Your reservation of ${places(q)} in ${w} was sent earlier and its outcome is not known. Press Retry to get its answer — nothing is sent until you do, and it cannot reserve twice.`,
      noStorage: "This browser does not let the page keep your reservation (session storage is unavailable), so it cannot be prepared safely. Nothing was sent.",
      receipt: (id) => `Reservation number: ${id}`,
      anotherReservation: "Start another reservation",
      changeSelection: "Change selection",
      invalidQuantity: (max) => `Choose between 1 and ${max} places. Nothing was sent.`,
      chooseWorkshop: "Choose a workshop.",
      cancel: "Cancel reservation",
      toReservation: "Cancel or check it in “Your reservations”",
      retryCancel: "Retry cancellation",
      cancelling: "Cancelling…",
      cancelled: (q, w) => `Cancelled: ${places(q)} in ${w} ${q === 1 ? "is" : "are"} free again.`,
      alreadyCancelled: "Already cancelled: this reservation was cancelled before; this cancellation changed nothing.",
      cancelUnclear: "Cancellation unclear — retry. The reservation may or may not have been cancelled; retrying sends the same cancellation again and cannot cancel anything else.",
      cancelUnclearSignIn: "Cancellation unclear — retry. Your session has ended: sign in again, then retry.",
      cancelResumed: "A cancellation of this reservation was sent earlier and its outcome is not known. Press Retry cancellation to get its answer — nothing is sent until you do.",
      confirm: "Confirm",
      retryConfirm: "Retry confirmation",
      confirming: "Confirming…",
      confirmed: (q, w) => `Confirmed: ${places(q)} in ${w} ${q === 1 ? "is" : "are"} now your reservation.`,
      confirmExpired: "Not confirmed: this hold had expired and its places were given back.",
      confirmReleased: "Not confirmed: this hold was released before.",
      alreadyConfirmed: "Already confirmed: this hold was confirmed before; this confirmation changed nothing.",
      confirmUnclear: "Confirmation unclear — retry. The hold may or may not have been confirmed; retrying sends the same confirmation again and cannot reserve twice.",
      confirmUnclearSignIn: "Confirmation unclear — retry. Your session has ended: sign in again, then retry.",
      confirmResumed: "A confirmation of this hold was sent earlier and its outcome is not known. Press Retry confirmation to get its answer — nothing is sent until you do.",
      release: "Release",
      retryRelease: "Retry release",
      releasing: "Releasing…",
      released: (q, w) => `Released: ${places(q)} in ${w} ${q === 1 ? "is" : "are"} free again.`,
      releaseExpired: "Nothing to release: this hold had expired and its places were given back already.",
      releaseConfirmed: "Not released: this hold was confirmed before; cancel its reservation instead.",
      alreadyReleased: "Already released: this hold was released before; this release changed nothing.",
      releaseUnclear: "Release unclear — retry. The hold may or may not have been released; retrying sends the same release again.",
      releaseUnclearSignIn: "Release unclear — retry. Your session has ended: sign in again, then retry.",
      releaseResumed: "A release of this hold was sent earlier and its outcome is not known. Press Retry release to get its answer — nothing is sent until you do.",
      mineTitle: "Your reservations",
      mineLoading: "Loading your reservations…",
      mineFailed: "Your reservations could not be loaded; they are shown as this page last knew them.",
      mineEmpty: "You have no reservations or holds yet.",
      mineMore: (n) => `Showing your newest ${n} reservations and holds.`,
      item: (q, w) => `${places(q)} in ${w}`,
      stateActive: "reserved",
      stateCancelled: "cancelled",
      stateHeld: (left) => `held, ${left} left`,
      stateExpired: "hold expired",
      stateConfirmed: "hold confirmed",
      stateReleased: "hold released",
      stateUnknown: "state not known",
      signOutWarning: (n, a) => `${n === 1 ? "One request of yours has" : n + " requests of yours have"} no known outcome yet. Signing out does not undo ${n === 1 ? "it" : "them"}: the page keeps ${n === 1 ? "it" : "them"} in this tab for ${a}. Sign in again here as ${a} to retry.`,
      signOutAnyway: "Sign out anyway",
      staySignedIn: "Stay signed in",
      join: "Join the waiting list",
      fullHint: (n) => n === 0 ? "No place is free. Join the waiting list to be offered places when they are freed." :
        `No place is free for you: ${n === 1 ? "1 person is" : n + " people are"} waiting. Join the waiting list to be offered places in turn when they are freed.`,
      waitingCount: (n) => `${n} waiting`,
      waiting: (q, w, pos) => `On the waiting list: you are number ${pos} for ${places(q)} in ${w}. When places are freed they are offered to you under “Your waiting list”, where you accept or decline them.`,
      joinInstead: (q) => `Join the waiting list for ${places(q)}`,
      joinUnclear: "Outcome unclear — retry. You may or may not be on the waiting list; retrying sends the same request again and cannot put you on it twice.",
      joinResumed: (q, w) => `Your request to join the waiting list for ${places(q)} in ${w} was sent earlier and its outcome is not known. Press Retry to get its answer — nothing is sent until you do, and it cannot put you on the list twice.`,
      entryReceipt: (id) => `Waiting list entry: ${id}`,
      toEntry: "See it under “Your waiting list”",
      waitTitle: "Your waiting list",
      waitFailed: "Your waiting list could not be loaded; it is shown as this page last knew it.",
      waitMore: (n) => `Showing your newest ${n} entries.`,
      entryWaiting: (pos) => (pos ? `waiting, number ${pos}` : "waiting"),
      entryOffered: (left) => `offered to you, ${left} left to accept`,
      entryOfferUntil: (d) => `Places are free for you until ${d}: accept them to reserve, or decline to pass them on.`,
      entryReserved: "accepted, reserved",
      entryLeft: "left",
      entryExpired: "offer expired",
      accept: "Accept",
      retryAccept: "Retry accepting",
      accepting: "Accepting…",
      accepted: (q, w) => `Accepted: ${places(q)} in ${w} ${q === 1 ? "is" : "are"} now your reservation.`,
      acceptExpired: "Not accepted: the offer's deadline had passed and its places went on to the next person waiting.",
      acceptReleased: "Not accepted: this offer was declined before.",
      alreadyAccepted: "Already accepted: this offer was accepted before; accepting it again changed nothing.",
      acceptUnclear: "Accepting unclear — retry. The offer may or may not have been accepted; retrying sends the same request again and cannot reserve twice.",
      acceptUnclearSignIn: "Accepting unclear — retry. Your session has ended: sign in again, then retry.",
      acceptResumed: "Accepting this offer was sent earlier and its outcome is not known. Press Retry accepting to get its answer — nothing is sent until you do.",
      decline: "Decline",
      retryDecline: "Retry declining",
      declining: "Declining…",
      declined: (q, w) => `Declined: ${places(q)} in ${w} ${q === 1 ? "goes" : "go"} on to the next person waiting.`,
      declineExpired: "Nothing to decline: the offer had expired already, and its places went on to the next person waiting.",
      declineReserved: "Not declined: this offer was accepted before; cancel its reservation instead.",
      alreadyLeft: "Already left: this entry left the waiting list before; this changed nothing.",
      declineUnclear: "Declining unclear — retry. The offer may or may not have been declined; retrying sends the same request again.",
      declineUnclearSignIn: "Declining unclear — retry. Your session has ended: sign in again, then retry.",
      declineResumed: "Declining this offer was sent earlier and its outcome is not known. Press Retry declining to get its answer — nothing is sent until you do.",
      leave: "Leave the waiting list",
      retryLeave: "Retry leaving",
      leaving: "Leaving…",
      left: (q, w) => `Left: you are no longer waiting for ${places(q)} in ${w}.`,
      leaveExpired: "Not waiting any more: places had been offered to you, and the offer had expired.",
      leaveReserved: "Not left: places offered to you were accepted and are your reservation; cancel it instead.",
      leaveUnclear: "Leaving unclear — retry. You may or may not have left the waiting list; retrying sends the same request again.",
      leaveUnclearSignIn: "Leaving unclear — retry. Your session has ended: sign in again, then retry.",
      leaveResumed: "Leaving the waiting list was sent earlier and its outcome is not known. Press Retry leaving to get its answer — nothing is sent until you do.",
    },
    de: {
      title: "Platz reservieren",
      description: "Plätze in Workshops reservieren: jede Reservierung wirkt genau einmal, wie oft ihre Anfrage auch gesendet wird.",
      toAdmin: "Seite für Veranstalter",
      signInTitle: "Anmelden",
      signInText: "Sie sind nicht angemeldet. Führen Sie auf dem Rechner, auf dem reserved läuft, diesen Befehl aus und öffnen Sie den ausgegebenen Link:",
      signInNothing: "Bis zur Anmeldung wird nichts gesendet.",
      signInWith: () => `Anmelden mit ${state.oidcName || "Ihrer Organisation"}`,
      signInTextOr: "Oder führen Sie auf dem Rechner, auf dem reserved läuft, diesen Befehl aus und öffnen Sie den ausgegebenen Link:",
      emailSignInText: "Sie sind nicht angemeldet. Geben Sie Ihre E-Mail-Adresse ein, und wir schicken Ihnen einen Link, der Sie anmeldet.",
      emailLabel: "E-Mail-Adresse",
      emailSend: "Anmeldelink schicken",
      emailSending: "Wird gesendet …",
      emailSent: (a) => `Sehen Sie in Ihr Postfach: Wenn sich ${a} hier anmelden darf, ist ein Link dorthin unterwegs. Er gilt einmal und 15 Minuten lang; öffnen Sie ihn in diesem Browser.`,
      emailInvalid: "Geben Sie eine E-Mail-Adresse ein, etwa ada@example.org.",
      emailTooMany: "Es wurden zu oft Links angefordert. Nehmen Sie den neuesten Link, der angekommen ist, oder versuchen Sie es später noch einmal.",
      emailError: "Der Link konnte nicht angefordert werden: Der Reservierungsdienst war nicht erreichbar oder hatte ein Problem. Versuchen Sie es noch einmal.",
      workshop: "Workshop",
      quantity: "Plätze",
      reserve: "Reservieren",
      retry: "Erneut versuchen",
      sending: "Wird gesendet…",
      availability: (w) => `${w.available} von ${w.capacity} Plätzen frei`,
      when: "Wann",
      where: "Wo",
      registration: "Anmeldung",
      perPerson: "Pro Person",
      regOpen: "offen",
      regOpenUntil: (d) => `offen bis ${d}`,
      regNotOpen: "noch nicht offen",
      regOpensAt: (d) => `öffnet am ${d}`,
      regClosed: "geschlossen",
      maxPerPerson: (n) => `höchstens ${plaetze(n)}`,
      quantityHint: (max) => `1 bis ${max} Plätze`,
      loading: "Workshops werden geladen…",
      loadFailed: "Die Workshops konnten nicht geladen werden. Laden Sie die Seite neu.",
      loginFailed: "Dieser Anmeldelink ist ungültig: Er wurde schon benutzt, ist abgelaufen (Links gelten 5 Minuten) oder wurde unvollständig kopiert. Führen Sie auf dem Rechner, auf dem reserved läuft, 'reservectl login-link' aus und öffnen Sie den neuen Link.",
      loginError: "Die Anmeldung hat nicht geklappt: Der Reservierungsdienst war nicht erreichbar oder hatte ein Problem. Führen Sie auf dem Rechner, auf dem reserved läuft, 'reservectl login-link' aus und öffnen Sie den neuen Link.",
      noWorkshops: "Es gibt noch keine Workshops.",
      reserved: (q, w) => `Reserviert: ${plaetze(q)} in ${w}.`,
      unavailable: (q, w) => `Nicht verfügbar: In ${w} ist für diese Reservierung ${q === 1 ? "kein Platz" : "nicht " + q + " Plätze"} mehr frei.`,
      registrationNotOpen: (q, w) => `Nicht reserviert: Die Anmeldung für ${w} ist noch nicht offen. Es wurde nichts reserviert.`,
      registrationClosed: (q, w) => `Nicht reserviert: Die Anmeldung für ${w} ist geschlossen. Es wurde nichts reserviert.`,
      limitReached: (q, w, max, already) => `Nicht reserviert: Eine Person kann in ${w} höchstens ${plaetze(max)} haben, und Sie haben schon ${plaetze(already)}.`,
      unclear: "Ergebnis unklar — erneut versuchen. Die Reservierung ist vielleicht schon erfolgt; ein erneuter Versuch sendet dieselbe Anfrage und kann nicht doppelt reservieren.",
      unclearSignIn: "Ergebnis unklar — erneut versuchen. Ihre Sitzung ist abgelaufen: Melden Sie sich neu an und versuchen Sie es dann erneut.",
      resumed: (q, w) => `Ihre Reservierung von ${plaetze(q)} in ${w} wurde früher gesendet; ihr Ergebnis ist nicht bekannt. Mit „Erneut versuchen“ erfahren Sie es — vorher wird nichts gesendet, und doppelt reservieren kann es nicht.`,
      noStorage: "Dieser Browser erlaubt der Seite nicht, Ihre Reservierung zu speichern (Session Storage nicht verfügbar); sie kann daher nicht sicher vorbereitet werden. Es wurde nichts gesendet.",
      receipt: (id) => `Reservierungsnummer: ${id}`,
      anotherReservation: "Weitere Reservierung beginnen",
      changeSelection: "Auswahl ändern",
      invalidQuantity: (max) => `Wählen Sie 1 bis ${max} Plätze. Es wurde nichts gesendet.`,
      chooseWorkshop: "Wählen Sie einen Workshop.",
      cancel: "Reservierung stornieren",
      toReservation: "Unter „Ihre Reservierungen“ stornieren oder ansehen",
      retryCancel: "Stornierung erneut versuchen",
      cancelling: "Wird storniert…",
      cancelled: (q, w) => `Storniert: ${plaetze(q)} in ${w} ${q === 1 ? "ist" : "sind"} wieder frei.`,
      alreadyCancelled: "Bereits storniert: Diese Reservierung wurde schon früher storniert; diese Stornierung hat nichts geändert.",
      cancelUnclear: "Stornierung unklar — erneut versuchen. Die Reservierung ist vielleicht schon storniert; ein erneuter Versuch sendet dieselbe Stornierung noch einmal und kann nichts anderes stornieren.",
      cancelUnclearSignIn: "Stornierung unklar — erneut versuchen. Ihre Sitzung ist abgelaufen: Melden Sie sich neu an und versuchen Sie es dann erneut.",
      cancelResumed: "Eine Stornierung dieser Reservierung wurde früher gesendet; ihr Ergebnis ist nicht bekannt. Mit „Stornierung erneut versuchen“ erfahren Sie es — vorher wird nichts gesendet.",
      confirm: "Bestätigen",
      retryConfirm: "Bestätigung erneut versuchen",
      confirming: "Wird bestätigt…",
      confirmed: (q, w) => `Bestätigt: ${plaetze(q)} in ${w} ${q === 1 ? "ist" : "sind"} jetzt Ihre Reservierung.`,
      confirmExpired: "Nicht bestätigt: Diese Vormerkung war abgelaufen, ihre Plätze wurden freigegeben.",
      confirmReleased: "Nicht bestätigt: Diese Vormerkung wurde schon früher freigegeben.",
      alreadyConfirmed: "Bereits bestätigt: Diese Vormerkung wurde schon früher bestätigt; diese Bestätigung hat nichts geändert.",
      confirmUnclear: "Bestätigung unklar — erneut versuchen. Die Vormerkung ist vielleicht schon bestätigt; ein erneuter Versuch sendet dieselbe Bestätigung und kann nicht doppelt reservieren.",
      confirmUnclearSignIn: "Bestätigung unklar — erneut versuchen. Ihre Sitzung ist abgelaufen: Melden Sie sich neu an und versuchen Sie es dann erneut.",
      confirmResumed: "Eine Bestätigung dieser Vormerkung wurde früher gesendet; ihr Ergebnis ist nicht bekannt. Mit „Bestätigung erneut versuchen“ erfahren Sie es — vorher wird nichts gesendet.",
      release: "Freigeben",
      retryRelease: "Freigabe erneut versuchen",
      releasing: "Wird freigegeben…",
      released: (q, w) => `Freigegeben: ${plaetze(q)} in ${w} ${q === 1 ? "ist" : "sind"} wieder frei.`,
      releaseExpired: "Nichts freizugeben: Diese Vormerkung war abgelaufen, ihre Plätze waren schon frei.",
      releaseConfirmed: "Nicht freigegeben: Diese Vormerkung wurde schon bestätigt; stornieren Sie stattdessen ihre Reservierung.",
      alreadyReleased: "Bereits freigegeben: Diese Vormerkung wurde schon früher freigegeben; diese Freigabe hat nichts geändert.",
      releaseUnclear: "Freigabe unklar — erneut versuchen. Die Vormerkung ist vielleicht schon freigegeben; ein erneuter Versuch sendet dieselbe Freigabe noch einmal.",
      releaseUnclearSignIn: "Freigabe unklar — erneut versuchen. Ihre Sitzung ist abgelaufen: Melden Sie sich neu an und versuchen Sie es dann erneut.",
      releaseResumed: "Eine Freigabe dieser Vormerkung wurde früher gesendet; ihr Ergebnis ist nicht bekannt. Mit „Freigabe erneut versuchen“ erfahren Sie es — vorher wird nichts gesendet.",
      mineTitle: "Ihre Reservierungen",
      mineLoading: "Ihre Reservierungen werden geladen…",
      mineFailed: "Ihre Reservierungen konnten nicht geladen werden; sie erscheinen so, wie die Seite sie zuletzt kannte.",
      mineEmpty: "Sie haben noch keine Reservierungen oder Vormerkungen.",
      mineMore: (n) => `Es werden Ihre neuesten ${n} Reservierungen und Vormerkungen gezeigt.`,
      item: (q, w) => `${plaetze(q)} in ${w}`,
      stateActive: "reserviert",
      stateCancelled: "storniert",
      stateHeld: (left) => `vorgemerkt, noch ${left}`,
      stateExpired: "Vormerkung abgelaufen",
      stateConfirmed: "Vormerkung bestätigt",
      stateReleased: "Vormerkung freigegeben",
      stateUnknown: "Stand nicht bekannt",
      signOutWarning: (n, a) => `${n === 1 ? "Eine Ihrer Anfragen hat" : n + " Ihrer Anfragen haben"} noch kein bekanntes Ergebnis. Abmelden macht sie nicht rückgängig: Die Seite behält sie in diesem Tab für ${a}. Melden Sie sich hier wieder als ${a} an, um es erneut zu versuchen.`,
      signOutAnyway: "Trotzdem abmelden",
      staySignedIn: "Angemeldet bleiben",
      join: "Auf die Warteliste",
      fullHint: (n) => n === 0 ? "Kein Platz ist frei. Setzen Sie sich auf die Warteliste, dann werden Ihnen Plätze angeboten, sobald welche frei werden." :
        `Für Sie ist kein Platz frei: ${n === 1 ? "1 Person wartet" : n + " Personen warten"}. Setzen Sie sich auf die Warteliste, dann werden Ihnen der Reihe nach Plätze angeboten, sobald welche frei werden.`,
      waitingCount: (n) => `${n} ${n === 1 ? "wartet" : "warten"}`,
      waiting: (q, w, pos) => `Auf der Warteliste: Sie sind Nummer ${pos} für ${plaetze(q)} in ${w}. Werden Plätze frei, werden sie Ihnen unter „Ihre Warteliste“ angeboten; dort nehmen Sie sie an oder lehnen sie ab.`,
      joinInstead: (q) => `Für ${plaetze(q)} auf die Warteliste`,
      joinUnclear: "Ergebnis unklar — erneut versuchen. Sie stehen vielleicht schon auf der Warteliste; ein erneuter Versuch sendet dieselbe Anfrage und kann Sie nicht zweimal daraufsetzen.",
      joinResumed: (q, w) => `Ihre Anfrage für die Warteliste für ${plaetze(q)} in ${w} wurde früher gesendet; ihr Ergebnis ist nicht bekannt. Mit „Erneut versuchen“ erfahren Sie es — vorher wird nichts gesendet, und zweimal auf die Liste kommen Sie nicht.`,
      entryReceipt: (id) => `Eintrag auf der Warteliste: ${id}`,
      toEntry: "Unter „Ihre Warteliste“ ansehen",
      waitTitle: "Ihre Warteliste",
      waitFailed: "Ihre Warteliste konnte nicht geladen werden; sie erscheint so, wie die Seite sie zuletzt kannte.",
      waitMore: (n) => `Es werden Ihre neuesten ${n} Einträge gezeigt.`,
      entryWaiting: (pos) => (pos ? `wartet, Nummer ${pos}` : "wartet"),
      entryOffered: (left) => `Ihnen angeboten, noch ${left} zum Annehmen`,
      entryOfferUntil: (d) => `Für Sie sind Plätze frei bis ${d}: Nehmen Sie sie an, um zu reservieren, oder lehnen Sie ab, damit sie weitergehen.`,
      entryReserved: "angenommen, reserviert",
      entryLeft: "verlassen",
      entryExpired: "Angebot abgelaufen",
      accept: "Annehmen",
      retryAccept: "Annehmen erneut versuchen",
      accepting: "Wird angenommen…",
      accepted: (q, w) => `Angenommen: ${plaetze(q)} in ${w} ${q === 1 ? "ist" : "sind"} jetzt Ihre Reservierung.`,
      acceptExpired: "Nicht angenommen: Die Frist des Angebots war abgelaufen, seine Plätze gingen an die nächste wartende Person.",
      acceptReleased: "Nicht angenommen: Dieses Angebot wurde schon früher abgelehnt.",
      alreadyAccepted: "Bereits angenommen: Dieses Angebot wurde schon früher angenommen; erneutes Annehmen hat nichts geändert.",
      acceptUnclear: "Annehmen unklar — erneut versuchen. Das Angebot ist vielleicht schon angenommen; ein erneuter Versuch sendet dieselbe Anfrage und kann nicht doppelt reservieren.",
      acceptUnclearSignIn: "Annehmen unklar — erneut versuchen. Ihre Sitzung ist abgelaufen: Melden Sie sich neu an und versuchen Sie es dann erneut.",
      acceptResumed: "Das Annehmen dieses Angebots wurde früher gesendet; sein Ergebnis ist nicht bekannt. Mit „Annehmen erneut versuchen“ erfahren Sie es — vorher wird nichts gesendet.",
      decline: "Ablehnen",
      retryDecline: "Ablehnen erneut versuchen",
      declining: "Wird abgelehnt…",
      declined: (q, w) => `Abgelehnt: ${plaetze(q)} in ${w} ${q === 1 ? "geht" : "gehen"} an die nächste wartende Person.`,
      declineExpired: "Nichts abzulehnen: Das Angebot war schon abgelaufen, seine Plätze gingen an die nächste wartende Person.",
      declineReserved: "Nicht abgelehnt: Dieses Angebot wurde schon angenommen; stornieren Sie stattdessen die Reservierung.",
      alreadyLeft: "Bereits verlassen: Dieser Eintrag hat die Warteliste schon früher verlassen; das hat nichts geändert.",
      declineUnclear: "Ablehnen unklar — erneut versuchen. Das Angebot ist vielleicht schon abgelehnt; ein erneuter Versuch sendet dieselbe Anfrage noch einmal.",
      declineUnclearSignIn: "Ablehnen unklar — erneut versuchen. Ihre Sitzung ist abgelaufen: Melden Sie sich neu an und versuchen Sie es dann erneut.",
      declineResumed: "Das Ablehnen dieses Angebots wurde früher gesendet; sein Ergebnis ist nicht bekannt. Mit „Ablehnen erneut versuchen“ erfahren Sie es — vorher wird nichts gesendet.",
      leave: "Warteliste verlassen",
      retryLeave: "Verlassen erneut versuchen",
      leaving: "Wird verlassen…",
      left: (q, w) => `Verlassen: Sie warten nicht mehr auf ${plaetze(q)} in ${w}.`,
      leaveExpired: "Sie warten nicht mehr: Ihnen waren Plätze angeboten worden, und das Angebot war abgelaufen.",
      leaveReserved: "Nicht verlassen: Ihnen angebotene Plätze wurden angenommen und sind Ihre Reservierung; stornieren Sie sie stattdessen.",
      leaveUnclear: "Verlassen unklar — erneut versuchen. Sie haben die Warteliste vielleicht schon verlassen; ein erneuter Versuch sendet dieselbe Anfrage noch einmal.",
      leaveUnclearSignIn: "Verlassen unklar — erneut versuchen. Ihre Sitzung ist abgelaufen: Melden Sie sich neu an und versuchen Sie es dann erneut.",
      leaveResumed: "Das Verlassen der Warteliste wurde früher gesendet; sein Ergebnis ist nicht bekannt. Mit „Verlassen erneut versuchen“ erfahren Sie es — vorher wird nichts gesendet.",
    },
  });

  const $ = (id) => document.getElementById(id);
  const el = {
    form: $("reservation-form"),
    workshop: $("workshop"),
    quantity: $("quantity"),
    quantityHint: $("quantity-hint"),
    availability: $("availability"),
    details: $("workshop-details"),
    when: $("workshop-when"),
    where: $("workshop-where"),
    registration: $("workshop-registration"),
    limit: $("workshop-limit"),
    description: $("workshop-description"),
    submit: $("submit"),
    join: $("join"),
    joinInstead: $("join-instead"),
    fullHint: $("full-hint"),
    status: $("status"),
    receipt: $("receipt"),
    newIntent: $("new-intent"),
    toReservation: $("to-reservation"),
    notice: $("notice"),
    signin: $("signin"),
    pageError: $("page-error"),
    actor: $("actor"),
    lang: $("lang"),
    logout: $("logout"),
    signOut: $("sign-out"),
    signOutWarning: $("sign-out-warning"),
    signOutWarningText: $("sign-out-warning-text"),
    signOutConfirm: $("sign-out-confirm"),
    signOutStay: $("sign-out-stay"),
    mine: $("mine"),
    mineStatus: $("mine-status"),
    holdList: $("hold-list"),
    reservationList: $("reservation-list"),
    waitlist: $("waitlist"),
    waitStatus: $("waitlist-status"),
    entryList: $("entry-list"),
  };

  const state = {
    lang: COMMON.chooseLanguage(),
    actor: null,
    displayName: "",
    workshops: [],
    intent: null, // The form's: {operation, payload: {workshop, quantity, waitlist?}, actor, outcome?}.
    ops: {}, // The actor's operations on listed items (cancel, confirm, release, accept, decline, leave), by opKey.
    tries: {}, // opKey → "unclear" or "signIn": sent on this page, answered without a verdict.
    sending: null, // "reserve", or the opKey of the operation on its way.
    message: null, // [textKey, ...args] of the status line
    notice: null,
    pageError: null, // [textKey] when the page cannot work at all.
    mine: { reservations: [], holds: [], loaded: false, failed: false, more: false },
    mineRead: 0, // The number of the latest read of the list; older answers are dropped.
    wait: { entries: [], loaded: false, failed: false, more: false }, // The actor's waiting list entries.
    waitRead: 0, // As mineRead, for the waiting list.
    polling: false, // A poll of the lists is on its way.
    polledAt: 0, // When the lists were last read (Date.now()).
    skew: 0, // The daemon's clock less this browser's, in ms, from the list's Date header.
    signOutWarning: false,
    oidcName: "", // What the daemon calls its identity provider, if it has one.
    emailStatus: null, // [textKey, ...args] of the email sign-in form's status line.
  };

  // workshop marks a message argument that names a workshop by id: it is
  // shown as the workshop's title as the page knows it when it renders, so
  // a message made before the workshops were loaded still names the title.
  const workshop = (id) => ({ workshopID: id });

  function t(key, ...args) {
    const v = TEXT[state.lang][key];
    const shown = args.map((a) => (a && typeof a === "object" && "workshopID" in a ? workshopTitle(a.workshopID) : a));
    return typeof v === "function" ? v(...shown) : v;
  }

  // Storage. Every access may throw (storage disabled, quota), and the
  // callers treat a throw as "the intent cannot be kept". Only the signed-in
  // actor's keys are ever read or written.
  function loadIntent(actor) {
    const raw = sessionStorage.getItem(INTENT_PREFIX + actor);
    if (raw === null) return null;
    const v = JSON.parse(raw);
    const ok = v && typeof v.operation === "string" && v.payload &&
      typeof v.payload.workshop === "string" && Number.isInteger(v.payload.quantity) &&
      v.actor === actor;
    return ok ? v : null;
  }

  function saveIntent(intent) {
    sessionStorage.setItem(INTENT_PREFIX + intent.actor, JSON.stringify(intent));
  }

  function clearIntent(actor) {
    sessionStorage.removeItem(INTENT_PREFIX + actor);
  }

  // holdPath returns the path of the operation op on a hold; leavePath
  // that of leaving a waiting list entry.
  const holdPath = (op) => (id) => "/api/v1/holds/" + encodeURIComponent(id) + "/" + op;
  const leavePath = (id) => "/api/v1/waitlist/" + encodeURIComponent(id) + "/leave";

  // OPERATIONS names, for each kind of operation on a listed item, its
  // route and body and the text keys of its buttons and messages. target is
  // the reservation id of a cancellation and the hold id of the others.
  const OPERATIONS = {
    cancel: {
      path: (id) => "/api/v1/reservations/" + encodeURIComponent(id) + "/cancel",
      body: null,
      start: "cancel", retry: "retryCancel", pending: "cancelling",
      outcomes: { cancelled: "cancelled", already_cancelled: "alreadyCancelled" },
    },
    confirm: {
      path: holdPath("confirm"),
      body: "{}",
      start: "confirm", retry: "retryConfirm", pending: "confirming",
      outcomes: { reserved: "confirmed", expired: "confirmExpired", released: "confirmReleased", already_confirmed: "alreadyConfirmed" },
    },
    release: {
      path: holdPath("release"),
      body: "{}",
      start: "release", retry: "retryRelease", pending: "releasing",
      outcomes: { released: "released", expired: "releaseExpired", already_confirmed: "releaseConfirmed", already_released: "alreadyReleased" },
    },
    // An offer from the waiting list is a hold of the places offered:
    // accepting it confirms the hold, and declining it leaves the entry,
    // which passes the places on. Leaving a waiting entry takes it off the
    // list. Their target is the hold (accept) or the entry.
    accept: {
      path: holdPath("confirm"),
      body: "{}", answers: "confirm",
      start: "accept", retry: "retryAccept", pending: "accepting",
      outcomes: { reserved: "accepted", expired: "acceptExpired", released: "acceptReleased", already_confirmed: "alreadyAccepted" },
    },
    decline: {
      path: leavePath,
      body: "{}", answers: "leave_waitlist",
      start: "decline", retry: "retryDecline", pending: "declining",
      outcomes: { left: "declined", expired: "declineExpired", already_left: "alreadyLeft", already_reserved: "declineReserved" },
    },
    leave: {
      path: leavePath,
      body: "{}", answers: "leave_waitlist",
      start: "leave", retry: "retryLeave", pending: "leaving",
      outcomes: { left: "left", expired: "leaveExpired", already_left: "alreadyLeft", already_reserved: "leaveReserved" },
    },
  };

  // ITEMS names, for each kind of operation, the list whose items it acts
  // on: the id prefix of their list items.
  const ITEMS = { cancel: "reservation", confirm: "hold", release: "hold", accept: "entry", decline: "entry", leave: "entry" };

  // opItem returns the id of the listed item an operation acts on: its
  // target, or for accepting an offer (whose target is the hold) the
  // entry.
  const opItem = (op) => (typeof op.item === "string" ? op.item : op.target);

  const opKey = (kind, target) => kind + ":" + target;

  // loadOps returns the actor's kept operations, leaving out any entry that
  // is not one (another actor's, another kind, a malformed one).
  function loadOps(actor) {
    return COMMON.loadKept(OPS_PREFIX + actor, (key, op) => typeof op.operation === "string" && Object.hasOwn(OPERATIONS, op.kind) &&
      typeof op.target === "string" && RESERVATION_ID.test(op.target) && key === opKey(op.kind, op.target) &&
      (op.item === undefined || (typeof op.item === "string" && RESERVATION_ID.test(op.item))) &&
      typeof op.workshop === "string" && Number.isInteger(op.quantity) && op.actor === actor);
  }

  // saveOp keeps op among the actor's operations; state.ops changes only
  // once it is kept.
  function saveOp(op) {
    const ops = Object.assign({}, state.ops, { [opKey(op.kind, op.target)]: op });
    sessionStorage.setItem(OPS_PREFIX + op.actor, JSON.stringify(ops));
    state.ops = ops;
  }

  // migrateStorage moves what an earlier version of this page kept in the
  // tab for whoever was signed in, under one key each, to the keys of the
  // actor it belongs to: the form's intent ("reserve.intent", its actor
  // inside) and a cancellation of its reservation ("reserve.cancel"), which
  // becomes one of the actor's operations. An actor's own newer keys win.
  // Nothing kept is dropped unread: an open intent there may have been sent.
  function migrateStorage() {
    try {
      const raw = sessionStorage.getItem("reserve.intent");
      const intent = raw === null ? null : JSON.parse(raw);
      if (intent && typeof intent.actor === "string" && intent.actor !== "") {
        if (sessionStorage.getItem(INTENT_PREFIX + intent.actor) === null) {
          sessionStorage.setItem(INTENT_PREFIX + intent.actor, raw);
        }
        const rawCancel = sessionStorage.getItem("reserve.cancel");
        const cancel = rawCancel === null ? null : JSON.parse(rawCancel);
        const reserved = intent.outcome && intent.outcome.reservation_id;
        if (cancel && typeof cancel.operation === "string" && cancel.actor === intent.actor &&
          cancel.reservation_id === reserved && intent.payload &&
          sessionStorage.getItem(OPS_PREFIX + intent.actor) === null) {
          const op = { kind: "cancel", target: reserved, operation: cancel.operation, workshop: intent.payload.workshop,
            quantity: intent.payload.quantity, actor: intent.actor };
          if (cancel.outcome) op.outcome = cancel.outcome;
          sessionStorage.setItem(OPS_PREFIX + intent.actor, JSON.stringify({ [opKey("cancel", reserved)]: op }));
        }
      }
      sessionStorage.removeItem("reserve.intent");
      sessionStorage.removeItem("reserve.cancel");
    } catch (e) {
      // Storage disabled or a record that is not JSON: leave it as it is.
    }
  }

  // post sends an operation under its key; no answer at all (also none
  // within the timeout) is status 0, which leaves the intent open. An
  // answer 429 rate_limited decided nothing and says when the daemon takes
  // this person's requests again: the same request, under the same key, is
  // sent again after its Retry-After (at least a second, at most
  // MAX_RATE_LIMITED_WAIT_S), up to RATE_LIMITED_SENDS sends in all, while
  // the page says "Sending…"; the last answer, if still 429, leaves the
  // intent open like any other that is not authoritative.
  async function post(path, key, body) {
    const headers = { "Idempotency-Key": key };
    if (body !== null) headers["Content-Type"] = "application/json";
    for (let sent = 1; ; sent++) {
      const r = await request("POST", path, headers, body === null ? undefined : body);
      if (sent >= RATE_LIMITED_SENDS || !(r.status === 429 && r.body && r.body.code === "rate_limited")) return r;
      const seconds = Number.parseInt(r.headers.get("Retry-After") || "", 10);
      const wait = Number.isInteger(seconds) ? Math.min(Math.max(seconds, 1), MAX_RATE_LIMITED_WAIT_S) : 1;
      await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    }
  }

  async function start() {
    el.lang.addEventListener("click", switchLanguage);
    el.form.addEventListener("submit", onSubmit);
    el.newIntent.addEventListener("click", onNewIntent);
    el.joinInstead.addEventListener("click", onJoinInstead);
    el.toReservation.addEventListener("click", onToReservation);
    el.workshop.addEventListener("change", () => {
      showChoice();
      renderActions(); // The workshop chosen decides between Reserve and Join the waiting list.
    });
    el.logout.addEventListener("submit", onSignOut);
    el.signOutConfirm.addEventListener("click", signOut);
    el.signOutStay.addEventListener("click", onStay);
    el.mine.addEventListener("click", onListClick);
    el.waitlist.addEventListener("click", onListClick);
    render();

    migrateStorage();
    COMMON.loadSession();
    if (location.pathname === LOGIN_PATH) {
      const code = new URLSearchParams(location.search).get("code");
      // The code leaves the address bar (and this tab's history) before it
      // is used; a reload cannot use it again.
      history.replaceState(null, "", "/");
      await signInWith(code || "");
    }
    const who = await COMMON.whoami();
    if (who && !who.signedIn) {
      COMMON.forgetSession(); // None, or one that has ended.
      await offerSignIn();
      el.signin.hidden = false;
      render();
      return; // Not signed in: show how, send nothing.
    }
    if (!who) {
      state.pageError = ["unreachable"];
      render();
      return; // No daemon to talk to: say so, send nothing.
    }
    state.actor = who.actor;
    state.displayName = who.displayName;
    if (who.language) state.lang = COMMON.keepLanguage(who.language);
    $("to-admin").hidden = !who.admin; // Only admins' sessions open the organizer's page.
    el.form.hidden = false;
    el.logout.hidden = false;
    el.mine.hidden = false;

    try {
      const saved = loadIntent(state.actor);
      if (saved) {
        state.intent = saved;
        const p = saved.payload;
        state.message = saved.outcome ? outcomeMessage(saved) : [p.waitlist === true ? "joinResumed" : "resumed", p.quantity, workshop(p.workshop)];
      }
      state.ops = loadOps(state.actor);
    } catch (e) {
      state.notice = ["noStorage"];
    }
    await Promise.all([loadWorkshops(), loadMine(), loadWait()]);
    render();
    setInterval(tick, 1000); // The countdowns of holds and offers.
  }

  // tick renders the lists' countdowns every second and, while an entry of
  // the actor's waits or is offered places, reads the lists again every
  // waitPoll(): an offer is made when someone else frees places, and it
  // lasts only until its deadline. The form itself is left alone.
  function tick() {
    renderLists();
    const live = state.wait.entries.some((e) => e.state === "waiting" || e.state === "offered");
    if (!live || state.polling || state.sending || Date.now() - state.polledAt < waitPoll()) return;
    state.polling = true;
    Promise.all([loadWorkshops(true), loadMine(), loadWait()]).then(() => {
      state.polling = false;
      showChoice();
      renderActions();
      renderLists();
    });
  }

  // waitPoll returns how often tick reads the lists while an entry waits
  // or is offered places: WAIT_POLL_MS, unless a test set
  // window.reserveWaitPollMs (a positive whole number of ms) to shorten it;
  // nothing else sets it, and it is read at every tick.
  function waitPoll() {
    const ms = window.reserveWaitPollMs;
    return Number.isInteger(ms) && ms > 0 ? ms : WAIT_POLL_MS;
  }

  // offerSignIn asks the daemon which sign-in methods it offers (GET
  // /api/v1/sign-in, open to anyone) and shows them on the signed-out
  // page: the button that starts a sign-in at its identity provider, and
  // the form that asks for a link to be mailed (in the page's language),
  // which replaces the hint about 'reservectl login-link'. Without an
  // answer only the hint is shown. The daemon answers a mail request the
  // same for every address, so the page can only say where to look.
  async function offerSignIn() {
    const r = await request("GET", "/api/v1/sign-in");
    const methods = r.status === 200 && r.body && Array.isArray(r.body.methods) ? r.body.methods : [];
    if (methods.includes("oidc")) {
      state.oidcName = typeof r.body.oidc_name === "string" ? r.body.oidc_name : "";
      $("oidc-signin").hidden = false;
      $("signin-text").dataset.text = "signInTextOr";
    }
    if (methods.includes("email")) {
      $("signin-link-hint").hidden = true;
      $("email-signin").hidden = false;
      $("email-signin").addEventListener("submit", onEmailSignIn);
    }
  }

  async function onEmailSignIn(event) {
    event.preventDefault();
    const input = $("email");
    const email = input.value.trim();
    if (email === "" || !input.checkValidity()) {
      state.emailStatus = ["emailInvalid"];
      renderEmailSignIn();
      input.focus();
      return;
    }
    state.emailStatus = ["emailSending"];
    renderEmailSignIn();
    const r = await request("POST", "/api/v1/sign-in/email", { "Content-Type": "application/json" },
      JSON.stringify({ email, language: state.lang }));
    state.emailStatus = r.status === 202 ? ["emailSent", email] : r.status === 429 ? ["emailTooMany"] : r.status === 422 ? ["emailInvalid"] : ["emailError"];
    renderEmailSignIn();
  }

  function renderEmailSignIn() {
    const status = $("email-status");
    status.textContent = state.emailStatus ? t(...state.emailStatus) : "";
    status.dataset.kind = state.emailStatus ? state.emailStatus[0] : "";
    $("email-send").disabled = Boolean(state.emailStatus && state.emailStatus[0] === "emailSending");
    $("email").setAttribute("aria-invalid", String(Boolean(state.emailStatus && state.emailStatus[0] === "emailInvalid")));
  }

  // signInWith redeems a login code for a session of this tab. The session
  // the tab had is sent along, and the daemon ends it once the new one is
  // open; when the code does not work the tab keeps it.
  async function signInWith(code) {
    const r = await request("POST", "/api/v1/sessions", { "Content-Type": "application/json" }, JSON.stringify({ code }));
    if (r.status === 201 && r.body && typeof r.body.session === "string") {
      COMMON.saveSession(r.body.session);
      return;
    }
    // 401: the code is unknown, used or expired; 422: there was none. Any
    // other answer is no verdict on the link.
    state.pageError = [r.status === 401 || r.status === 422 ? "loginFailed" : "loginError"];
  }

  // openIntents counts the actor's intents whose outcome is not known.
  function openIntents() {
    let n = state.intent && !state.intent.outcome ? 1 : 0;
    for (const op of Object.values(state.ops)) {
      if (!op.outcome) n++;
    }
    return n;
  }

  // onSignOut signs out at once when the actor has no open intent, and
  // otherwise first says what becomes of them; only "Sign out anyway" then
  // signs out.
  function onSignOut(event) {
    event.preventDefault();
    if (openIntents() === 0) {
      signOut();
      return;
    }
    state.signOutWarning = true;
    render();
    el.signOutConfirm.focus();
  }

  function onStay() {
    state.signOutWarning = false;
    render();
    el.signOut.focus();
  }

  // signOut ends this tab's session and loads the signed-out page; the
  // actor's intents stay kept in this tab.
  function signOut() {
    return COMMON.signOut("/");
  }

  // loadWorkshops refreshes the choice and its live availability. Its own
  // messages ("loading", "loadFailed", "noWorkshops") never replace the
  // answer to a reservation: stale availability is harmless, a lost
  // "outcome unclear" is not. A quiet load (a poll) says nothing at all.
  async function loadWorkshops(quiet) {
    if (!state.message && !quiet) {
      state.message = ["loading"];
      render();
    }
    let ok = false;
    const r = await request("GET", "/api/v1/workshops");
    if (r.status === 200 && r.body && Array.isArray(r.body.workshops)) {
      state.workshops = r.body.workshops;
      ok = true;
    }
    if (state.message && state.message[0] === "loading") {
      state.message = !ok ? ["loadFailed"] : state.workshops.length === 0 ? ["noWorkshops"] : null;
    }
  }

  // loadMine reads the actor's newest reservations and holds. A failed
  // read keeps what the page knew; only the latest read is shown.
  async function loadMine() {
    const n = ++state.mineRead;
    const query = "?status=all&limit=" + LIST_LIMIT;
    const [rs, hs] = await Promise.all([request("GET", "/api/v1/reservations" + query), request("GET", "/api/v1/holds" + query)]);
    if (n !== state.mineRead) return;
    const ok = rs.status === 200 && rs.body && Array.isArray(rs.body.reservations) &&
      hs.status === 200 && hs.body && Array.isArray(hs.body.holds);
    if (!ok) {
      state.mine.failed = true;
      return;
    }
    const item = (x, id) => x && typeof x[id] === "string" && RESERVATION_ID.test(x[id]) &&
      typeof x.workshop === "string" && Number.isInteger(x.quantity);
    state.mine = {
      reservations: rs.body.reservations.filter((x) => item(x, "id")),
      holds: hs.body.holds.filter((x) => item(x, "hold_id")),
      loaded: true,
      failed: false,
      more: typeof rs.body.next_cursor === "string" || typeof hs.body.next_cursor === "string",
    };
    const date = Date.parse(hs.headers.get("Date") || "");
    if (!Number.isNaN(date)) state.skew = date - Date.now();
  }

  // loadWait reads the actor's newest waiting list entries, with their
  // state and, while waiting, their position now. A failed read keeps what
  // the page knew; only the latest read is shown.
  async function loadWait() {
    const n = ++state.waitRead;
    const r = await request("GET", "/api/v1/waitlist?status=all&limit=" + LIST_LIMIT);
    if (n !== state.waitRead) return;
    state.polledAt = Date.now();
    if (!(r.status === 200 && r.body && Array.isArray(r.body.entries))) {
      state.wait.failed = true;
      return;
    }
    state.wait = {
      entries: r.body.entries.filter((e) => e && typeof e.entry_id === "string" && RESERVATION_ID.test(e.entry_id) &&
        typeof e.workshop === "string" && Number.isInteger(e.quantity) && typeof e.state === "string" &&
        (e.hold_id === undefined || (typeof e.hold_id === "string" && RESERVATION_ID.test(e.hold_id)))),
      loaded: true,
      failed: false,
      more: typeof r.body.next_cursor === "string",
    };
    const date = Date.parse(r.headers.get("Date") || "");
    if (!Number.isNaN(date)) state.skew = date - Date.now();
  }

  // refresh reads availability and the lists again after an answer.
  async function refresh() {
    await Promise.all([loadWorkshops(), loadMine(), loadWait()]);
    render();
  }

  function currentPayload() {
    return { workshop: el.workshop.value, quantity: Number(el.quantity.value) };
  }

  function selectedWorkshop() {
    return state.workshops.find((w) => w.id === el.workshop.value);
  }

  // showChoice shows the selected workshop: its free places, its schedule
  // and its limits. It never changes the quantity chosen: one out of range
  // is refused when sent, not rewritten.
  function showChoice() {
    const w = selectedWorkshop();
    const waiting = w && Number.isInteger(w.waiting) && w.waiting > 0 ? " · " + t("waitingCount", w.waiting) : "";
    setText(el.availability, w ? t("availability", w) + waiting : "");
    showDetails(w);
    const max = w ? Math.max(1, w.max_quantity) : 1;
    el.quantity.max = String(max);
    el.quantityHint.textContent = t("quantityHint", max);
  }

  // joinOffered reports whether the form offers to join the waiting list
  // of the chosen workshop instead of reserving: no place of it is free, or
  // people wait for its places already (who then go first). An intent
  // made keeps what it was made as.
  function joinOffered() {
    if (state.intent) return state.intent.payload.waitlist === true;
    const w = selectedWorkshop();
    return Boolean(w) && (w.available === 0 || (Number.isInteger(w.waiting) && w.waiting > 0));
  }

  // onSubmit starts (or retries) the form's intent: a reservation, or,
  // when the form offers it, joining the waiting list, which is a
  // reservation request with "waitlist": true under a key of its own like
  // any other intent.
  async function onSubmit(event) {
    event.preventDefault();
    if (state.sending) return; // A second click while sending does nothing.
    if (!state.intent) {
      const payload = currentPayload();
      if (joinOffered()) payload.waitlist = true;
      const w = selectedWorkshop();
      if (!w) {
        state.message = ["chooseWorkshop"];
        render();
        return;
      }
      if (!Number.isInteger(payload.quantity) || payload.quantity < 1 || payload.quantity > w.max_quantity) {
        state.message = ["invalidQuantity", w.max_quantity];
        render();
        el.quantity.focus();
        return;
      }
      if (!startIntent(payload)) return;
    } else if (state.intent.outcome) {
      return; // Settled: only a new intent leads on.
    }
    await send(state.intent);
  }

  // startIntent makes payload the form's new intent, under a new key, kept
  // in sessionStorage before anything is sent; when it cannot be kept it
  // says so and returns false, and the form keeps the intent it had.
  function startIntent(payload) {
    const intent = { operation: COMMON.newKey(), payload, actor: state.actor };
    try {
      saveIntent(intent); // Before the first send, or not at all.
    } catch (e) {
      state.notice = ["noStorage"];
      render();
      return false;
    }
    state.intent = intent;
    state.notice = null;
    return true;
  }

  // joinInsteadOffered reports whether the form, its reservation refused
  // as "unavailable", offers to join the waiting list for the places asked
  // instead. Only a reservation's refusal leads there (a request to join
  // is never answered "unavailable"). Joining is offered only for as many
  // places as the workshop has and allows in one request: no freed place
  // makes up more than its capacity until its organizers raise it, and a
  // request above its limit per reservation is refused outright.
  function joinInsteadOffered() {
    const intent = state.intent;
    const o = intent && intent.outcome;
    if (!o || o.status !== "unavailable" || intent.payload.waitlist === true) return false;
    const w = state.workshops.find((x) => x.id === intent.payload.workshop);
    const q = intent.payload.quantity;
    return Boolean(w) && q <= w.capacity && q <= w.max_quantity;
  }

  // onJoinInstead joins the waiting list for the places of a reservation
  // refused as "unavailable". It is an explicit new action, like "Change
  // selection": a new intent with a key of its own, kept before its first
  // send and retried with that key like any other. The refused intent
  // stays settled and is never sent again.
  async function onJoinInstead() {
    if (state.sending || !joinInsteadOffered()) return; // A second click while sending does nothing.
    const p = state.intent.payload;
    if (!startIntent({ workshop: p.workshop, quantity: p.quantity, waitlist: true })) return;
    await send(state.intent);
  }

  async function send(intent) {
    state.sending = "reserve";
    state.message = ["sending"];
    render();
    const p = intent.payload;
    const body = { workshop: p.workshop, quantity: p.quantity };
    if (p.waitlist === true) body.waitlist = true;
    const r = await post("/api/v1/reservations", intent.operation, JSON.stringify(body));
    state.sending = null;
    const outcome = authoritative(r, p);
    if (outcome) {
      intent.outcome = outcome;
      try {
        saveIntent(intent);
      } catch (e) {
        // The answer is shown; keeping it for a reload is best effort.
      }
      state.message = outcomeMessage(intent);
    } else {
      state.message = [r.status === 401 ? "unclearSignIn" : p.waitlist === true ? "joinUnclear" : "unclear"];
    }
    render();
    // The button that was pressed may be gone now: keep keyboard users on
    // the one that leads on, or on the retry.
    if (outcome) {
      el.newIntent.focus();
    } else {
      (p.waitlist === true ? el.join : el.submit).focus();
    }
    await refresh(); // Availability has changed, whatever the answer says.
  }

  // authoritative and opAuthoritative (common.js) say which answers settle
  // a reservation and an operation on a listed item.

  // REFUSALS names the text key of each refusal of a reservation.
  const REFUSALS = {
    unavailable: "unavailable",
    registration_not_open: "registrationNotOpen",
    registration_closed: "registrationClosed",
    limit_reached: "limitReached",
  };

  function outcomeMessage(intent) {
    const p = intent.payload;
    const o = intent.outcome;
    if (o.status === "reserved") return ["reserved", p.quantity, workshop(p.workshop)];
    if (o.status === "waiting") return ["waiting", p.quantity, workshop(p.workshop), o.position];
    const key = Object.hasOwn(REFUSALS, o.status) ? REFUSALS[o.status] : "unavailable";
    return [key, p.quantity, workshop(p.workshop), o.max_per_person, o.already];
  }

  // opMessage is what the page says about an operation now: its outcome,
  // that it is on its way, that its answer was no verdict, or (kept from
  // before this page) that it was sent and its outcome is not known.
  function opMessage(op) {
    const o = OPERATIONS[op.kind];
    const key = opKey(op.kind, op.target);
    if (op.outcome) return [o.outcomes[op.outcome.status], op.quantity, workshop(op.workshop)];
    if (state.sending === key) return [o.pending];
    const tried = state.tries[key];
    return [op.kind + (tried === "signIn" ? "UnclearSignIn" : tried === "unclear" ? "Unclear" : "Resumed")];
  }

  function workshopTitle(id) {
    const w = state.workshops.find((x) => x.id === id);
    return w ? w.title : id;
  }

  // formCancel returns the cancellation of the reservation the form made,
  // if there is one.
  function formCancel() {
    const intent = state.intent;
    if (!intent || !intent.outcome || intent.outcome.status !== "reserved") return null;
    return state.ops[opKey("cancel", intent.outcome.reservation_id)] || null;
  }

  // onToReservation moves the focus from the form to the listed item of
  // the reservation it made: its one cancel control is there.
  function onToReservation(event) {
    event.preventDefault();
    const li = formItem();
    if (!li) return;
    const button = li.querySelector("button[data-kind]:not([hidden])");
    li.scrollIntoView({ block: "nearest" });
    (button || li).focus();
  }

  // formItem returns the list item of what the form's intent made, when
  // the list shows it: its reservation, or its waiting list entry.
  function formItem() {
    const o = state.intent && state.intent.outcome;
    if (!o) return null;
    if (o.status === "reserved") return $("reservation-" + o.reservation_id);
    return o.status === "waiting" ? $("entry-" + o.entry_id) : null;
  }

  // onListClick starts or retries the operation of a button of a list.
  function onListClick(event) {
    const button = event.target.closest("button[data-kind]");
    if (!button) return;
    const li = button.closest("li");
    const kind = button.dataset.kind;
    const target = kind === "accept" ? li.dataset.hold : li.dataset.id;
    if (!target) return;
    runOp(kind, target, li.dataset.id, li.dataset.workshop, Number(li.dataset.quantity), button);
  }

  // runOp starts (or retries) the operation of kind on target, of the
  // listed item item: a new one is kept before its first send, an open one
  // is sent again with its key, a settled one is never sent again.
  async function runOp(kind, target, item, workshopID, quantity, button) {
    if (state.sending) return; // A second click while sending does nothing.
    const key = opKey(kind, target);
    let op = state.ops[key];
    if (!op) {
      // Another operation open on the same item needs its answer first.
      if (Object.values(state.ops).some((o) => (opItem(o) === item || o.target === target) && !o.outcome)) return;
      op = { operation: COMMON.newKey(), kind, target, workshop: workshopID, quantity, actor: state.actor };
      if (item !== target) op.item = item;
      try {
        saveOp(op); // Before the first send, or not at all.
      } catch (e) {
        state.notice = ["noStorage"];
        render();
        return;
      }
      state.notice = null;
    } else if (op.outcome) {
      return; // Settled: nothing more to send.
    }
    state.sending = key;
    render();
    const r = await post(OPERATIONS[kind].path(target), op.operation, OPERATIONS[kind].body);
    state.sending = null;
    const outcome = opAuthoritative(r, { kind: OPERATIONS[kind].answers || kind, target });
    if (outcome) {
      delete state.tries[key];
      const settled = Object.assign({}, op, { outcome });
      try {
        saveOp(settled);
      } catch (e) {
        state.ops = Object.assign({}, state.ops, { [key]: settled }); // Shown; keeping it is best effort.
      }
    } else {
      state.tries[key] = r.status === 401 ? "signIn" : "unclear";
    }
    render();
    // Keep keyboard users where the answer is: on the retry, or on the list
    // item whose buttons are gone.
    if (button.isConnected && !button.hidden) {
      button.focus();
    } else {
      const li = $(ITEMS[kind] + "-" + item);
      if (li) li.focus();
    }
    await refresh(); // Availability and the list may have changed.
  }

  function onNewIntent() {
    const cancel = formCancel();
    if (cancel && !cancel.outcome) return; // An open cancellation first needs its answer.
    try {
      clearIntent(state.actor);
    } catch (e) {
      // Nothing kept, nothing to clear.
    }
    state.intent = null;
    state.message = null;
    state.notice = null;
    render();
    el.workshop.focus();
    loadWorkshops().then(render);
  }

  function switchLanguage() {
    state.lang = COMMON.otherLanguage(state.lang);
    render();
    if (state.actor) COMMON.saveLanguage(state.lang); // Mails come in it too.
  }

  // registrationText returns what the page says about registering for w,
  // from the daemon's verdict ("open", "not_open", "closed") and the
  // times it has, or "" when the daemon says nothing.
  function registrationText(w, format) {
    const opens = instant(w.registration_opens_at);
    const closes = instant(w.registration_closes_at) || instant(w.starts_at);
    switch (w.registration) {
      case "open": return closes ? t("regOpenUntil", format.format(closes)) : t("regOpen");
      case "not_open": return opens ? t("regOpensAt", format.format(opens)) : t("regNotOpen");
      case "closed": return t("regClosed");
      default: return "";
    }
  }

  // showDetail shows text in the detail dd (and its group) or hides both.
  function showDetail(dd, text) {
    dd.textContent = text;
    dd.parentElement.hidden = text === "";
  }

  // showDetails shows the schedule of workshop w — its date and time in
  // its own time zone, place, registration and limit per person — and its
  // description as plain text (line breaks kept, never HTML). A workshop
  // without these members shows none of them.
  function showDetails(w) {
    const format = w ? COMMON.dateFormat(state.lang, w.time_zone) : null;
    showDetail(el.when, w ? COMMON.whenText(state.lang, w) : "");
    showDetail(el.where, w && typeof w.location === "string" ? w.location : "");
    showDetail(el.registration, w ? registrationText(w, format) : "");
    el.registration.dataset.state = w && typeof w.registration === "string" ? w.registration : "";
    showDetail(el.limit, w && Number.isInteger(w.max_per_person) ? t("maxPerPerson", w.max_per_person) : "");
    el.description.textContent = w && typeof w.description === "string" ? w.description : "";
    el.description.hidden = el.description.textContent === "";
    el.details.hidden = [...el.details.querySelectorAll("dl > div")].every((g) => g.hidden) && el.description.hidden;
  }

  function renderOptions() {
    const keep = state.intent ? state.intent.payload.workshop : el.workshop.value;
    el.workshop.replaceChildren();
    const ids = state.workshops.map((w) => w.id);
    if (state.intent && !ids.includes(keep)) ids.unshift(keep);
    for (const id of ids) {
      const w = state.workshops.find((x) => x.id === id);
      const opt = document.createElement("option");
      opt.value = id;
      opt.textContent = w ? w.title : id; // Short, so that it fits the select at 320 px.
      el.workshop.append(opt);
    }
    if (keep && ids.includes(keep)) el.workshop.value = keep;
  }

  // setText and setData change a node only when it differs, so that the
  // list's once-a-second render leaves nodes under the pointer alone.
  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function setData(node, name, value) {
    if (node.dataset[name] !== value) node.dataset[name] = value;
  }

  function render() {
    COMMON.renderFrame(t, state.lang, el, state.actor, state.pageError, state.displayName);
    renderEmailSignIn();

    renderOptions();
    showChoice();
    const intent = state.intent;
    if (intent) el.quantity.value = String(intent.payload.quantity);
    const locked = Boolean(intent);
    el.workshop.disabled = locked;
    el.quantity.disabled = locked;

    const settled = Boolean(intent && intent.outcome);
    const made = settled ? intent.outcome : {};
    const cancel = formCancel();
    renderActions();
    el.receipt.hidden = made.status !== "reserved" && made.status !== "waiting";
    el.receipt.textContent = made.status === "reserved" ? t("receipt", made.reservation_id) :
      made.status === "waiting" ? t("entryReceipt", made.entry_id) : "";
    const message = cancel ? opMessage(cancel) : state.message;
    el.status.textContent = message ? t(...message) : "";
    el.status.dataset.kind = message ? message[0] : "";
    el.notice.hidden = !state.notice;
    el.notice.textContent = state.notice ? t(...state.notice) : "";
    const open = openIntents();
    el.signOutWarning.hidden = !(state.signOutWarning && open > 0);
    el.signOutWarningText.textContent = el.signOutWarning.hidden ? "" : t("signOutWarning", open, state.actor);
    renderLists();
  }

  // renderActions shows the form's buttons: Reserve, or Join the waiting
  // list (with why, and how many wait) when the form offers that instead;
  // the retry of an open intent on the button of its kind; and, once the
  // intent is settled, only the ways to a new one: joining the waiting list
  // for the places of a reservation refused as unavailable, when the form
  // offers that, and starting anew.
  function renderActions() {
    const intent = state.intent;
    const settled = Boolean(intent && intent.outcome);
    const cancel = formCancel();
    const join = joinOffered();
    const sendingText = (text) => (state.sending === "reserve" ? t("sending") : intent && !settled ? t("retry") : t(text));
    el.submit.hidden = settled || join;
    el.submit.disabled = Boolean(state.sending) || (!intent && state.workshops.length === 0);
    setText(el.submit, sendingText("reserve"));
    el.join.hidden = settled || !join;
    el.join.disabled = Boolean(state.sending);
    setText(el.join, sendingText("join"));
    const w = selectedWorkshop();
    el.fullHint.hidden = el.join.hidden || !w;
    setText(el.fullHint, el.fullHint.hidden ? "" : t("fullHint", Number.isInteger(w.waiting) ? w.waiting : 0));
    const instead = joinInsteadOffered();
    el.joinInstead.hidden = !instead;
    el.joinInstead.disabled = Boolean(state.sending);
    setText(el.joinInstead, instead ? t("joinInstead", intent.payload.quantity) : "");
    el.newIntent.hidden = !settled || Boolean(cancel && !cancel.outcome);
    if (settled) {
      const made = intent.outcome.status === "reserved" || intent.outcome.status === "waiting";
      el.newIntent.textContent = made ? t("anotherReservation") : t("changeSelection");
    }
  }

  // renderLists shows the actor's waiting list and reservations, and the
  // form's link to the item its intent made while a list shows it: the
  // item's controls are there (a reservation's one cancel control, an
  // entry's leave).
  function renderLists() {
    renderWait();
    renderMine();
    const intent = state.intent;
    const cancel = formCancel();
    const listed = formItem();
    const waiting = Boolean(listed) && intent.outcome.status === "waiting";
    el.toReservation.hidden = !listed || Boolean(cancel && cancel.outcome);
    el.toReservation.href = listed ? "#" + listed.id : "#mine";
    el.toReservation.dataset.text = waiting ? "toEntry" : "toReservation";
    setText(el.toReservation, t(el.toReservation.dataset.text));
  }

  // shownItems returns the listed items and, for every open operation of
  // kinds on an item the list does not show (the list could not be read,
  // or the item is past its first page), an item made from the operation
  // itself, so that its retry is always offered.
  function shownItems(items, idOf, kinds) {
    const shown = items.map((x) => Object.assign({}, x, { id: x[idOf] }));
    const ids = new Set(shown.map((x) => x.id));
    for (const op of Object.values(state.ops)) {
      const id = opItem(op);
      if (kinds.includes(op.kind) && !op.outcome && !ids.has(id)) {
        const item = { id, workshop: op.workshop, quantity: op.quantity };
        if (op.kind === "accept") item.hold_id = op.target;
        shown.push(item);
        ids.add(id);
      }
    }
    return shown;
  }

  // targetOf returns the target of an operation of kind on a listed item:
  // the item itself, or the hold that is an entry's offer.
  const targetOf = (kind, item) => (kind === "accept" ? item.hold_id : item.id);

  // remaining returns the time until a hold's deadline by the daemon's
  // clock, in whole seconds (rounded up), and 0 once it has passed.
  function remaining(h) {
    const left = Date.parse(h.expires_at) - (Date.now() + state.skew);
    return Number.isNaN(left) || left <= 0 ? 0 : Math.ceil(left / 1000);
  }

  function clock(s) {
    const two = (n) => String(n).padStart(2, "0");
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    return (h > 0 ? h + ":" + two(m) : String(m)) + ":" + two(s % 60);
  }

  function renderMine() {
    if (!state.actor) return;
    const m = state.mine;
    const reservations = shownItems(m.reservations, "id", ["cancel"]);
    // An offer from the waiting list is a hold, shown with its entry only.
    const offers = new Set(state.wait.entries.map((e) => e.hold_id).filter(Boolean));
    const holds = shownItems(m.holds.filter((h) => !offers.has(h.hold_id) && typeof h.entry_id !== "string"), "hold_id", ["confirm", "release"]);
    const line = m.failed ? t("mineFailed") : !m.loaded ? t("mineLoading") :
      reservations.length + holds.length === 0 ? t("mineEmpty") : m.more ? t("mineMore", LIST_LIMIT) : "";
    setText(el.mineStatus, line);
    syncList(el.holdList, holds, "hold", ["confirm", "release"], holdState);
    syncList(el.reservationList, reservations, "reservation", ["cancel"], reservationState);
  }

  // ENTRY_KINDS are the operations on a waiting list entry.
  const ENTRY_KINDS = ["accept", "decline", "leave"];

  // renderWait shows the actor's waiting list entries, newest first; the
  // section is shown once there is one.
  function renderWait() {
    if (!state.actor) return;
    const w = state.wait;
    const entries = shownItems(w.entries, "entry_id", ENTRY_KINDS);
    el.waitlist.hidden = entries.length === 0;
    setText(el.waitStatus, w.failed ? t("waitFailed") : w.more ? t("waitMore", LIST_LIMIT) : "");
    syncList(el.entryList, entries, "entry", ENTRY_KINDS, entryState);
  }

  // entryState returns what an entry shows and the operations it allows: a
  // waiting entry its position and Leave; an offered one, until the
  // offer's deadline, a countdown to it, the deadline itself (in the
  // workshop's time zone), Accept and Decline.
  function entryState(e) {
    switch (e.state) {
      case "waiting":
        return { text: t("entryWaiting", Number.isInteger(e.position) ? e.position : 0), kinds: ["leave"], state: "waiting" };
      case "offered": {
        const left = remaining(e);
        if (left === 0) return { text: t("entryExpired"), kinds: [], state: "expired" };
        const w = state.workshops.find((x) => x.id === e.workshop);
        const until = COMMON.dateFormat(state.lang, w && w.time_zone).format(new Date(Date.parse(e.expires_at)));
        return { text: t("entryOffered", clock(left)), kinds: e.hold_id ? ["accept", "decline"] : ["decline"], state: "offered", offer: t("entryOfferUntil", until) };
      }
      case "reserved": return { text: t("entryReserved"), kinds: [], state: "reserved" };
      case "left": return { text: t("entryLeft"), kinds: [], state: "left" };
      case "expired": return { text: t("entryExpired"), kinds: [], state: "expired" };
      default: return { text: t("stateUnknown"), kinds: [], state: "" };
    }
  }

  // reservationState returns what a reservation item shows and whether it
  // may start a cancellation.
  function reservationState(r) {
    if (r.status === "active") return { text: t("stateActive"), live: true, state: "active" };
    if (r.status === "cancelled") return { text: t("stateCancelled"), live: false, state: "cancelled" };
    return { text: t("stateUnknown"), live: false, state: "" };
  }

  // holdState returns what a hold item shows and whether it may start a
  // confirmation or a release: only a held hold before its deadline.
  function holdState(h) {
    if (h.state === "held") {
      const left = remaining(h);
      return left > 0 ? { text: t("stateHeld", clock(left)), live: true, state: "held" } : { text: t("stateExpired"), live: false, state: "expired" };
    }
    const word = { confirmed: "stateConfirmed", released: "stateReleased", expired: "stateExpired" }[h.state];
    return { text: t(word || "stateUnknown"), live: false, state: word ? h.state : "" };
  }

  // syncList shows items in ul, one li per item (id "<prefix>-<id>"),
  // reusing the li already shown for an item so that focus and a pointer
  // on its buttons stay where they are.
  function syncList(ul, items, prefix, kinds, stateOf) {
    const old = new Map([...ul.children].map((li) => [li.id, li]));
    let at = ul.firstChild;
    for (const item of items) {
      const id = prefix + "-" + item.id;
      const li = old.get(id) || newItem(id, item.id, prefix, kinds);
      fillItem(li, item, kinds, stateOf(item));
      if (li === at) {
        at = at.nextSibling;
      } else {
        ul.insertBefore(li, at);
      }
    }
    while (at) {
      const next = at.nextSibling;
      at.remove();
      at = next;
    }
  }

  function newItem(id, target, prefix, kinds) {
    const li = document.createElement("li");
    li.id = id;
    li.className = prefix;
    li.tabIndex = -1;
    const what = document.createElement("p");
    what.className = "item-what";
    const status = document.createElement("p");
    status.className = "item-status";
    status.setAttribute("role", "status");
    const actions = document.createElement("div");
    actions.className = "actions";
    for (const kind of kinds) {
      const b = document.createElement("button");
      b.type = "button";
      b.id = kind + "-" + target;
      b.className = "secondary " + kind + (kind === "confirm" || kind === "accept" ? "" : " danger");
      b.dataset.kind = kind;
      actions.append(b);
    }
    if (prefix === "entry") {
      const offer = document.createElement("p");
      offer.className = "item-offer";
      offer.hidden = true;
      li.append(what, offer, status, actions);
    } else {
      li.append(what, status, actions);
    }
    return li;
  }

  // buttonText returns the text key of the button of kind on target: what
  // is happening while it is sent, its retry while it is open, else what
  // it starts.
  function buttonText(kind, target) {
    const key = opKey(kind, target);
    const o = OPERATIONS[kind];
    if (state.sending === key) return o.pending;
    return state.ops[key] && !state.ops[key].outcome ? o.retry : o.start;
  }

  // fillItem shows an item's state and its buttons: while an operation on
  // the item is open only its retry, else the operations a live item
  // allows (s.kinds, or all of them when s.live), and none once an
  // operation on it is settled.
  function fillItem(li, item, kinds, s) {
    li.dataset.id = item.id;
    li.dataset.workshop = item.workshop;
    li.dataset.quantity = String(item.quantity);
    setData(li, "hold", item.hold_id || "");
    setData(li, "state", s.state);
    const ops = kinds.map((k) => targetOf(k, item) && state.ops[opKey(k, targetOf(k, item))]).filter(Boolean);
    const open = ops.find((o) => !o.outcome);
    const latest = open || ops.find((o) => o.outcome);
    setText(li.querySelector(".item-what"), t("item", item.quantity, workshop(item.workshop)) + " · " + s.text);
    const offer = li.querySelector(".item-offer");
    if (offer) {
      offer.hidden = !s.offer || Boolean(latest);
      setText(offer, offer.hidden ? "" : s.offer);
    }
    const status = li.querySelector(".item-status");
    const message = latest ? opMessage(latest) : null;
    setText(status, message ? t(...message) : "");
    setData(status, "kind", message ? message[0] : "");
    for (const b of li.querySelectorAll("button[data-kind]")) {
      const kind = b.dataset.kind;
      b.hidden = open ? open.kind !== kind : Boolean(latest) || !(s.kinds ? s.kinds.includes(kind) : s.live);
      b.disabled = Boolean(state.sending);
      setText(b, t(buttonText(kind, targetOf(kind, item) || item.id)));
    }
  }

  start();
})();
