// app.js is the reservation form's whole behaviour. Its one rule: an intent
// (operation key + payload + actor) is written to sessionStorage before the
// first send, every retry sends exactly that intent again, and only an
// explicit "new intent" action makes a new key. Only a 201 "reserved" or a
// 409 "unavailable" answer is authoritative; anything else, also no answer
// within 15 s, leaves the intent open with "outcome unclear — retry".
// Nothing is ever sent by itself.
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

  const TEXT = COMMON.texts({
    en: {
      title: "Reserve a place",
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
    },
    de: {
      title: "Platz reservieren",
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
  };

  const state = {
    lang: COMMON.chooseLanguage(),
    actor: null,
    displayName: "",
    workshops: [],
    intent: null, // The form's: {operation, payload: {workshop, quantity}, actor, outcome?}.
    ops: {}, // The actor's cancellations, confirmations and releases, by opKey.
    tries: {}, // opKey → "unclear" or "signIn": sent on this page, answered without a verdict.
    sending: null, // "reserve", or the opKey of the operation on its way.
    message: null, // [textKey, ...args] of the status line
    notice: null,
    pageError: null, // [textKey] when the page cannot work at all.
    mine: { reservations: [], holds: [], loaded: false, failed: false, more: false },
    mineRead: 0, // The number of the latest read of the list; older answers are dropped.
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
      path: (id) => "/api/v1/holds/" + encodeURIComponent(id) + "/confirm",
      body: "{}",
      start: "confirm", retry: "retryConfirm", pending: "confirming",
      outcomes: { reserved: "confirmed", expired: "confirmExpired", released: "confirmReleased", already_confirmed: "alreadyConfirmed" },
    },
    release: {
      path: (id) => "/api/v1/holds/" + encodeURIComponent(id) + "/release",
      body: "{}",
      start: "release", retry: "retryRelease", pending: "releasing",
      outcomes: { released: "released", expired: "releaseExpired", already_confirmed: "releaseConfirmed", already_released: "alreadyReleased" },
    },
  };

  const opKey = (kind, target) => kind + ":" + target;

  // loadOps returns the actor's kept operations, leaving out any entry that
  // is not one (another actor's, another kind, a malformed one).
  function loadOps(actor) {
    return COMMON.loadKept(OPS_PREFIX + actor, (key, op) => typeof op.operation === "string" && Object.hasOwn(OPERATIONS, op.kind) &&
      typeof op.target === "string" && RESERVATION_ID.test(op.target) && key === opKey(op.kind, op.target) &&
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
  // within the timeout) is status 0, which leaves the intent open.
  function post(path, key, body) {
    const headers = { "Idempotency-Key": key };
    if (body !== null) headers["Content-Type"] = "application/json";
    return request("POST", path, headers, body === null ? undefined : body);
  }

  async function start() {
    el.lang.addEventListener("click", switchLanguage);
    el.form.addEventListener("submit", onSubmit);
    el.newIntent.addEventListener("click", onNewIntent);
    el.toReservation.addEventListener("click", onToReservation);
    el.workshop.addEventListener("change", showChoice);
    el.logout.addEventListener("submit", onSignOut);
    el.signOutConfirm.addEventListener("click", signOut);
    el.signOutStay.addEventListener("click", onStay);
    el.mine.addEventListener("click", onListClick);
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
        state.message = saved.outcome ? outcomeMessage(saved) : ["resumed", p.quantity, workshop(p.workshop)];
      }
      state.ops = loadOps(state.actor);
    } catch (e) {
      state.notice = ["noStorage"];
    }
    await Promise.all([loadWorkshops(), loadMine()]);
    render();
    setInterval(renderMine, 1000); // The holds' countdowns.
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
  // "outcome unclear" is not.
  async function loadWorkshops() {
    if (!state.message) {
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

  // refresh reads availability and the list again after an answer.
  async function refresh() {
    await Promise.all([loadWorkshops(), loadMine()]);
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
    el.availability.textContent = w ? t("availability", w) : "";
    showDetails(w);
    const max = w ? Math.max(1, w.max_quantity) : 1;
    el.quantity.max = String(max);
    el.quantityHint.textContent = t("quantityHint", max);
  }

  async function onSubmit(event) {
    event.preventDefault();
    if (state.sending) return; // A second click while sending does nothing.
    if (!state.intent) {
      const payload = currentPayload();
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
      const intent = { operation: crypto.randomUUID(), payload, actor: state.actor };
      try {
        saveIntent(intent); // Before the first send, or not at all.
      } catch (e) {
        state.notice = ["noStorage"];
        render();
        return;
      }
      state.intent = intent;
      state.notice = null;
    } else if (state.intent.outcome) {
      return; // Settled: only "new intent" leads on.
    }
    await send(state.intent);
  }

  async function send(intent) {
    state.sending = "reserve";
    state.message = ["sending"];
    render();
    const p = intent.payload;
    const r = await post("/api/v1/reservations", intent.operation, JSON.stringify({ workshop: p.workshop, quantity: p.quantity }));
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
      state.message = [r.status === 401 ? "unclearSignIn" : "unclear"];
    }
    render();
    // The button that was pressed may be gone now: keep keyboard users on
    // the one that leads on.
    if (outcome) el.newIntent.focus();
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
    const intent = state.intent;
    const li = intent && intent.outcome && $("reservation-" + intent.outcome.reservation_id);
    if (!li) return;
    const button = li.querySelector("button[data-kind]:not([hidden])");
    li.scrollIntoView({ block: "nearest" });
    (button || li).focus();
  }

  // onListClick starts or retries the operation of a button of the list.
  function onListClick(event) {
    const button = event.target.closest("button[data-kind]");
    if (!button) return;
    const li = button.closest("li");
    runOp(button.dataset.kind, li.dataset.id, li.dataset.workshop, Number(li.dataset.quantity), button);
  }

  // runOp starts (or retries) the operation of kind on target: a new one is
  // kept before its first send, an open one is sent again with its key, a
  // settled one is never sent again.
  async function runOp(kind, target, workshopID, quantity, button) {
    if (state.sending) return; // A second click while sending does nothing.
    const key = opKey(kind, target);
    let op = state.ops[key];
    if (!op) {
      // Another operation open on the same item needs its answer first.
      if (Object.values(state.ops).some((o) => o.target === target && !o.outcome)) return;
      op = { operation: crypto.randomUUID(), kind, target, workshop: workshopID, quantity, actor: state.actor };
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
    const outcome = opAuthoritative(r, op);
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
      const li = $((kind === "cancel" ? "reservation-" : "hold-") + target);
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
    const reserved = settled && intent.outcome.status === "reserved";
    const cancel = formCancel();
    const cancelOpen = Boolean(cancel && !cancel.outcome);
    el.submit.hidden = settled;
    el.submit.disabled = Boolean(state.sending) || (!intent && state.workshops.length === 0);
    el.submit.textContent = state.sending === "reserve" ? t("sending") : intent && !settled ? t("retry") : t("reserve");
    el.newIntent.hidden = !settled || cancelOpen;
    if (settled) {
      el.newIntent.textContent = intent.outcome.status === "reserved" ? t("anotherReservation") : t("changeSelection");
    }
    el.receipt.hidden = !reserved;
    el.receipt.textContent = reserved ? t("receipt", intent.outcome.reservation_id) : "";
    const message = cancel ? opMessage(cancel) : state.message;
    el.status.textContent = message ? t(...message) : "";
    el.status.dataset.kind = message ? message[0] : "";
    el.notice.hidden = !state.notice;
    el.notice.textContent = state.notice ? t(...state.notice) : "";
    const open = openIntents();
    el.signOutWarning.hidden = !(state.signOutWarning && open > 0);
    el.signOutWarningText.textContent = el.signOutWarning.hidden ? "" : t("signOutWarning", open, state.actor);
    renderMine();
    // The form's reservation has one cancel control, in the list; the form
    // leads there while the list shows it and it is not settled.
    const listed = reserved && $("reservation-" + intent.outcome.reservation_id);
    el.toReservation.hidden = !listed || Boolean(cancel && cancel.outcome);
    el.toReservation.href = listed ? "#" + listed.id : "#mine";
  }

  // shownItems returns the listed items and, for every open operation of
  // kinds on an item the list does not show (the list could not be read,
  // or the item is past its first page), an item made from the operation
  // itself, so that its retry is always offered.
  function shownItems(items, idOf, kinds) {
    const shown = items.map((x) => Object.assign({}, x, { id: x[idOf] }));
    const ids = new Set(shown.map((x) => x.id));
    for (const op of Object.values(state.ops)) {
      if (kinds.includes(op.kind) && !op.outcome && !ids.has(op.target)) {
        shown.push({ id: op.target, workshop: op.workshop, quantity: op.quantity });
        ids.add(op.target);
      }
    }
    return shown;
  }

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
    const holds = shownItems(m.holds, "hold_id", ["confirm", "release"]);
    const line = m.failed ? t("mineFailed") : !m.loaded ? t("mineLoading") :
      reservations.length + holds.length === 0 ? t("mineEmpty") : m.more ? t("mineMore", LIST_LIMIT) : "";
    setText(el.mineStatus, line);
    syncList(el.holdList, holds, "hold", ["confirm", "release"], holdState);
    syncList(el.reservationList, reservations, "reservation", ["cancel"], reservationState);
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
      b.className = "secondary " + kind + (kind === "confirm" ? "" : " danger");
      b.dataset.kind = kind;
      actions.append(b);
    }
    li.append(what, status, actions);
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
  // allows, and none once an operation on it is settled.
  function fillItem(li, item, kinds, s) {
    li.dataset.id = item.id;
    li.dataset.workshop = item.workshop;
    li.dataset.quantity = String(item.quantity);
    setData(li, "state", s.state);
    const ops = kinds.map((k) => state.ops[opKey(k, item.id)]).filter(Boolean);
    const open = ops.find((o) => !o.outcome);
    const latest = open || ops.find((o) => o.outcome);
    setText(li.querySelector(".item-what"), t("item", item.quantity, workshop(item.workshop)) + " · " + s.text);
    const status = li.querySelector(".item-status");
    const message = latest ? opMessage(latest) : null;
    setText(status, message ? t(...message) : "");
    setData(status, "kind", message ? message[0] : "");
    for (const b of li.querySelectorAll("button[data-kind]")) {
      const kind = b.dataset.kind;
      b.hidden = open ? open.kind !== kind : Boolean(latest) || !s.live;
      b.disabled = Boolean(state.sending);
      setText(b, t(buttonText(kind, item.id)));
    }
  }

  start();
})();
