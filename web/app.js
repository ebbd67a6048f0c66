// app.js is the reservation form's whole behaviour. Its one rule: an intent
// (operation key + payload + actor) is written to sessionStorage before the
// first send, every retry sends exactly that intent again, and only an
// explicit "new intent" action makes a new key. Only a 201 "reserved" or a
// 409 "unavailable" answer is authoritative; anything else leaves the intent
// open with "outcome unclear — retry". Nothing is ever sent by itself.
//
// Cancelling the reservation just made is an intent of its own, with the
// same rules: {operation, reservation_id, actor} is written to
// sessionStorage ("reserve.cancel") before the first send, every retry sends
// that key again, and only a 200 "cancelled" or a 409 "already_cancelled"
// for that reservation settles it. While a cancellation is open, the page
// offers only its retry.
//
// Signing in: a login link leads to /login?code=…, where the daemon serves
// this page only when the browser was not sent there by another site or
// port. The page takes the code out of the address bar, redeems it with
// POST /api/v1/sessions and keeps the session it gets in sessionStorage
// ("reserve.session"), which belongs to this origin (scheme, host and port)
// and this tab. Every API request carries it as "Authorization: Bearer …"
// and no cookie at all, so no server on another port of this host can read,
// replay or plant a session, and another tab's sign-in never changes whose
// session this tab sends. Without sessionStorage the session lasts as long
// as the page. A code anywhere but at /login is never used. "Sign out" ends
// the session on the daemon and forgets it here.
"use strict";

(function () {
  const STORAGE_KEY = "reserve.intent";
  const CANCEL_KEY = "reserve.cancel";
  const SESSION_KEY = "reserve.session";
  const LOGIN_PATH = "/login";
  const LANG_KEY = "reserve.lang";
  const RESERVATION_ID = /^[0-9a-f]{32}$/;

  const TEXT = {
    en: {
      title: "Reserve a place",
      langHint: "Switch language",
      langSwitch: "Deutsch",
      signOut: "Sign out",
      signInTitle: "Sign in",
      signInText: "You are not signed in. On the machine that runs reserved, run this command and open the link it prints:",
      signInNothing: "Nothing is sent until you are signed in.",
      workshop: "Workshop",
      quantity: "Places",
      reserve: "Reserve",
      retry: "Retry",
      sending: "Sending…",
      signedInAs: (a) => `Signed in as ${a}`,
      option: (w) => `${w.title} — ${w.available} of ${w.capacity} free`,
      quantityHint: (max) => `1 to ${max} places`,
      loading: "Loading workshops…",
      loadFailed: "The workshops could not be loaded. Reload the page to try again.",
      unreachable: "The reservation service could not be reached. Reload the page to try again.",
      loginFailed: "This login link is not valid: it was used already, has expired (links last 5 minutes), or was copied incompletely. On the machine that runs reserved, run 'reservectl login-link' and open the new link.",
      loginError: "Signing in did not work: the reservation service could not be reached or had a problem. On the machine that runs reserved, run 'reservectl login-link' and open the new link.",
      noWorkshops: "There are no workshops to reserve yet.",
      reserved: (q, w) => `Reserved: ${q} ${q === 1 ? "place" : "places"} in ${w}.`,
      unavailable: (q, w) => `Unavailable: ${w} has no ${q === 1 ? "place" : q + " places"} left for this reservation.`,
      unclear: "Outcome unclear — retry. Your reservation may or may not have been made; retrying sends the same request again and cannot reserve twice.",
      unclearSignIn: "Outcome unclear — retry. Your session has ended: sign in again, then retry.",
      resumed: "An earlier attempt of this reservation has no confirmed outcome. Press Retry to get its answer — nothing is sent until you do.",
      otherActor: (a) => `A reservation prepared by ${a} in this tab was not resumed and nothing was sent for it.`,
      noStorage: "This browser does not let the page keep your reservation (session storage is unavailable), so it cannot be prepared safely. Nothing was sent.",
      receipt: (id) => `Reservation number: ${id}`,
      anotherReservation: "Start another reservation",
      changeSelection: "Change selection",
      invalidQuantity: (max) => `Choose between 1 and ${max} places.`,
      chooseWorkshop: "Choose a workshop.",
      cancel: "Cancel reservation",
      retryCancel: "Retry cancellation",
      cancelling: "Cancelling…",
      cancelled: (q, w) => `Cancelled: ${q} ${q === 1 ? "place" : "places"} in ${w} ${q === 1 ? "is" : "are"} free again.`,
      alreadyCancelled: "Already cancelled: this reservation was cancelled before; this cancellation changed nothing.",
      cancelUnclear: "Cancellation unclear — retry. The reservation may or may not have been cancelled; retrying sends the same cancellation again and cannot cancel anything else.",
      cancelUnclearSignIn: "Cancellation unclear — retry. Your session has ended: sign in again, then retry.",
      cancelResumed: "An earlier cancellation of this reservation has no confirmed outcome. Press Retry cancellation to get its answer — nothing is sent until you do.",
    },
    de: {
      title: "Platz reservieren",
      langHint: "Sprache wechseln",
      langSwitch: "English",
      signOut: "Abmelden",
      signInTitle: "Anmelden",
      signInText: "Sie sind nicht angemeldet. Führen Sie auf dem Rechner, auf dem reserved läuft, diesen Befehl aus und öffnen Sie den ausgegebenen Link:",
      signInNothing: "Bis zur Anmeldung wird nichts gesendet.",
      workshop: "Workshop",
      quantity: "Plätze",
      reserve: "Reservieren",
      retry: "Erneut versuchen",
      sending: "Wird gesendet…",
      signedInAs: (a) => `Angemeldet als ${a}`,
      option: (w) => `${w.title} — ${w.available} von ${w.capacity} frei`,
      quantityHint: (max) => `1 bis ${max} Plätze`,
      loading: "Workshops werden geladen…",
      loadFailed: "Die Workshops konnten nicht geladen werden. Laden Sie die Seite neu.",
      unreachable: "Der Reservierungsdienst ist nicht erreichbar. Laden Sie die Seite neu, um es erneut zu versuchen.",
      loginFailed: "Dieser Anmeldelink ist ungültig: Er wurde schon benutzt, ist abgelaufen (Links gelten 5 Minuten) oder wurde unvollständig kopiert. Führen Sie auf dem Rechner, auf dem reserved läuft, 'reservectl login-link' aus und öffnen Sie den neuen Link.",
      loginError: "Die Anmeldung hat nicht geklappt: Der Reservierungsdienst war nicht erreichbar oder hatte ein Problem. Führen Sie auf dem Rechner, auf dem reserved läuft, 'reservectl login-link' aus und öffnen Sie den neuen Link.",
      noWorkshops: "Es gibt noch keine Workshops.",
      reserved: (q, w) => `Reserviert: ${q} ${q === 1 ? "Platz" : "Plätze"} in ${w}.`,
      unavailable: (q, w) => `Nicht verfügbar: In ${w} ist für diese Reservierung ${q === 1 ? "kein Platz" : "nicht " + q + " Plätze"} mehr frei.`,
      unclear: "Ergebnis unklar — erneut versuchen. Die Reservierung ist vielleicht schon erfolgt; ein erneuter Versuch sendet dieselbe Anfrage und kann nicht doppelt reservieren.",
      unclearSignIn: "Ergebnis unklar — erneut versuchen. Ihre Sitzung ist abgelaufen: Melden Sie sich neu an und versuchen Sie es dann erneut.",
      resumed: "Für einen früheren Versuch dieser Reservierung gibt es noch kein bestätigtes Ergebnis. Mit „Erneut versuchen“ erfahren Sie es — vorher wird nichts gesendet.",
      otherActor: (a) => `Eine von ${a} in diesem Tab vorbereitete Reservierung wurde nicht fortgesetzt; dafür wurde nichts gesendet.`,
      noStorage: "Dieser Browser erlaubt der Seite nicht, Ihre Reservierung zu speichern (Session Storage nicht verfügbar); sie kann daher nicht sicher vorbereitet werden. Es wurde nichts gesendet.",
      receipt: (id) => `Reservierungsnummer: ${id}`,
      anotherReservation: "Weitere Reservierung beginnen",
      changeSelection: "Auswahl ändern",
      invalidQuantity: (max) => `Wählen Sie 1 bis ${max} Plätze.`,
      chooseWorkshop: "Wählen Sie einen Workshop.",
      cancel: "Reservierung stornieren",
      retryCancel: "Stornierung erneut versuchen",
      cancelling: "Wird storniert…",
      cancelled: (q, w) => `Storniert: ${q} ${q === 1 ? "Platz" : "Plätze"} in ${w} ${q === 1 ? "ist" : "sind"} wieder frei.`,
      alreadyCancelled: "Bereits storniert: Diese Reservierung wurde schon früher storniert; diese Stornierung hat nichts geändert.",
      cancelUnclear: "Stornierung unklar — erneut versuchen. Die Reservierung ist vielleicht schon storniert; ein erneuter Versuch sendet dieselbe Stornierung noch einmal und kann nichts anderes stornieren.",
      cancelUnclearSignIn: "Stornierung unklar — erneut versuchen. Ihre Sitzung ist abgelaufen: Melden Sie sich neu an und versuchen Sie es dann erneut.",
      cancelResumed: "Für eine frühere Stornierung dieser Reservierung gibt es noch kein bestätigtes Ergebnis. Mit „Stornierung erneut versuchen“ erfahren Sie es — vorher wird nichts gesendet.",
    },
  };

  const $ = (id) => document.getElementById(id);
  const el = {
    form: $("reservation-form"),
    workshop: $("workshop"),
    quantity: $("quantity"),
    quantityHint: $("quantity-hint"),
    submit: $("submit"),
    status: $("status"),
    receipt: $("receipt"),
    newIntent: $("new-intent"),
    cancel: $("cancel"),
    notice: $("notice"),
    signin: $("signin"),
    pageError: $("page-error"),
    actor: $("actor"),
    lang: $("lang"),
    logout: $("logout"),
  };

  const state = {
    lang: chooseLanguage(),
    session: null, // This tab's browser session, sent as a bearer credential.
    actor: null,
    workshops: [],
    intent: null, // {operation, payload: {workshop, quantity}, actor, outcome?}
    cancel: null, // {operation, reservation_id, actor, outcome?} for intent's reservation.
    sending: false,
    message: null, // [textKey, ...args] of the status line
    notice: null,
    pageError: null, // [textKey] when the page cannot work at all.
  };

  function chooseLanguage() {
    try {
      const saved = localStorage.getItem(LANG_KEY);
      if (saved === "de" || saved === "en") return saved;
    } catch (e) {
      // No storage: fall back to the browser language.
    }
    return (navigator.language || "en").toLowerCase().startsWith("de") ? "de" : "en";
  }

  function t(key, ...args) {
    const v = TEXT[state.lang][key];
    return typeof v === "function" ? v(...args) : v;
  }

  // Storage. Every access may throw (storage disabled, quota), and the
  // callers treat a throw as "the intent cannot be kept".
  function loadIntent() {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (raw === null) return null;
    const v = JSON.parse(raw);
    const ok = v && typeof v.operation === "string" && v.payload &&
      typeof v.payload.workshop === "string" && Number.isInteger(v.payload.quantity) &&
      typeof v.actor === "string";
    return ok ? v : null;
  }

  function saveIntent(intent) {
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify(intent));
  }

  function clearIntent() {
    sessionStorage.removeItem(STORAGE_KEY);
    sessionStorage.removeItem(CANCEL_KEY);
  }

  // loadCancel returns the kept cancel intent for the reservation id, or
  // null when there is none (a kept one for another reservation or actor is
  // not this page's business and is left alone).
  function loadCancel(reservationID, actor) {
    const raw = sessionStorage.getItem(CANCEL_KEY);
    if (raw === null) return null;
    const v = JSON.parse(raw);
    const ok = v && typeof v.operation === "string" && v.reservation_id === reservationID &&
      v.actor === actor;
    return ok ? v : null;
  }

  function saveCancel(cancel) {
    sessionStorage.setItem(CANCEL_KEY, JSON.stringify(cancel));
  }

  // loadSession returns the session this tab kept, or null.
  function loadSession() {
    try {
      return sessionStorage.getItem(SESSION_KEY);
    } catch (e) {
      return null; // No storage: no session survives a reload.
    }
  }

  function saveSession(session) {
    state.session = session;
    try {
      sessionStorage.setItem(SESSION_KEY, session);
    } catch (e) {
      // Kept for this page only.
    }
  }

  function forgetSession() {
    state.session = null;
    try {
      sessionStorage.removeItem(SESSION_KEY);
    } catch (e) {
      // Nothing kept, nothing to forget.
    }
  }

  // api sends one request to the daemon with this tab's session and never a
  // cookie (credentials: "omit"), so a cookie that any server of this host
  // set has no part in it.
  async function api(method, path, options) {
    const headers = Object.assign({}, options && options.headers);
    if (state.session) headers.Authorization = "Bearer " + state.session;
    const resp = await fetch(path, Object.assign({ method, credentials: "omit", cache: "no-store" }, options, { headers }));
    const text = await resp.text();
    let body = null;
    try {
      body = text === "" ? null : JSON.parse(text);
    } catch (e) {
      body = undefined; // Not JSON at all.
    }
    return { status: resp.status, body };
  }

  async function start() {
    el.lang.addEventListener("click", switchLanguage);
    el.form.addEventListener("submit", onSubmit);
    el.newIntent.addEventListener("click", onNewIntent);
    el.cancel.addEventListener("click", onCancel);
    el.workshop.addEventListener("change", applyLimits);
    el.logout.addEventListener("submit", onSignOut);
    render();

    state.session = loadSession();
    if (location.pathname === LOGIN_PATH) {
      const code = new URLSearchParams(location.search).get("code");
      // The code leaves the address bar (and this tab's history) before it
      // is used; a reload cannot use it again.
      history.replaceState(null, "", "/");
      await signInWith(code || "");
    }
    let who;
    try {
      who = await api("GET", "/api/v1/whoami");
    } catch (e) {
      who = { status: 0 };
    }
    if (who.status === 401) {
      forgetSession(); // None, or one that has ended.
      el.signin.hidden = false;
      render();
      return; // Not signed in: show how, send nothing.
    }
    if (who.status !== 200 || !who.body || typeof who.body.actor !== "string") {
      state.pageError = ["unreachable"];
      render();
      return; // No daemon to talk to: say so, send nothing.
    }
    state.actor = who.body.actor;
    el.form.hidden = false;
    el.logout.hidden = false;

    try {
      const saved = loadIntent();
      if (saved && saved.actor !== state.actor) {
        state.notice = ["otherActor", saved.actor];
      } else if (saved) {
        state.intent = saved;
        state.message = saved.outcome ? outcomeMessage(saved) : ["resumed"];
        if (saved.outcome && saved.outcome.status === "reserved") {
          state.cancel = loadCancel(saved.outcome.reservation_id, state.actor);
          if (state.cancel) {
            state.message = state.cancel.outcome ? cancelMessage(state.cancel) : ["cancelResumed"];
          }
        }
      }
    } catch (e) {
      state.notice = ["noStorage"];
    }
    await loadWorkshops();
    render();
  }

  // signInWith redeems a login code for a session of this tab. The session
  // the tab had is sent along, and the daemon ends it once the new one is
  // open; when the code does not work the tab keeps it.
  async function signInWith(code) {
    let r;
    try {
      r = await api("POST", "/api/v1/sessions", {
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ code }),
      });
    } catch (e) {
      r = { status: 0, body: undefined }; // Network error: no answer at all.
    }
    if (r.status === 201 && r.body && typeof r.body.session === "string") {
      saveSession(r.body.session);
      return;
    }
    // 401: the code is unknown, used or expired; 422: there was none. Any
    // other answer is no verdict on the link.
    state.pageError = [r.status === 401 || r.status === 422 ? "loginFailed" : "loginError"];
  }

  // onSignOut ends this tab's session on the daemon, forgets it and loads
  // the signed-out page. Should the daemon not answer, the session is
  // forgotten all the same and ends by itself when it expires.
  async function onSignOut(event) {
    event.preventDefault();
    try {
      await api("DELETE", "/api/v1/sessions/current");
    } catch (e) {
      // Forgotten below all the same.
    }
    forgetSession();
    location.replace("/");
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
    try {
      const r = await api("GET", "/api/v1/workshops");
      if (r.status === 200 && r.body && Array.isArray(r.body.workshops)) {
        state.workshops = r.body.workshops;
        ok = true;
      }
    } catch (e) {
      // ok stays false.
    }
    if (state.message && state.message[0] === "loading") {
      state.message = !ok ? ["loadFailed"] : state.workshops.length === 0 ? ["noWorkshops"] : null;
    }
  }

  function currentPayload() {
    return { workshop: el.workshop.value, quantity: Number(el.quantity.value) };
  }

  function selectedWorkshop() {
    return state.workshops.find((w) => w.id === el.workshop.value);
  }

  function applyLimits() {
    const w = selectedWorkshop();
    const max = w ? Math.max(1, w.max_quantity) : 1;
    el.quantity.max = String(max);
    if (Number(el.quantity.value) > max) el.quantity.value = String(max);
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
    state.sending = true;
    state.message = ["sending"];
    render();
    let r;
    try {
      r = await api("POST", "/api/v1/reservations", {
        headers: { "Content-Type": "application/json", "Idempotency-Key": intent.operation },
        body: JSON.stringify({ workshop: intent.payload.workshop, quantity: intent.payload.quantity }),
      });
    } catch (e) {
      r = { status: 0, body: undefined }; // Network error: no answer at all.
    }
    state.sending = false;
    const outcome = authoritative(r, intent.payload);
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
    await loadWorkshops(); // Availability has changed, whatever the answer says.
    render();
  }

  // answerMembers lists the members of each answer's body, exactly: a body
  // with any other member is not the documented answer.
  const answerMembers = {
    reserved: "quantity,reservation_id,status,workshop",
    unavailable: "quantity,status,workshop",
    cancelled: "quantity,reservation_id,status,workshop",
    already_cancelled: "quantity,reservation_id,status,workshop",
  };

  // answerBody returns the body of r when it is an answer's, with exactly
  // that answer's members, else null.
  function answerBody(r) {
    const b = r.body;
    if (!b || typeof b !== "object" || Array.isArray(b)) return null;
    if (answerMembers[b.status] !== Object.keys(b).sort().join(",")) return null;
    if (typeof b.workshop !== "string" || b.workshop === "" || !Number.isInteger(b.quantity) || b.quantity < 1) return null;
    return b;
  }

  // authoritative returns the settled outcome of an answer, or null when the
  // answer does not say for sure what happened.
  function authoritative(r, payload) {
    const b = answerBody(r);
    if (!b) return null;
    if (r.status === 201 && b.status === "reserved" && b.workshop === payload.workshop &&
        b.quantity === payload.quantity && RESERVATION_ID.test(b.reservation_id)) {
      return { status: "reserved", reservation_id: b.reservation_id };
    }
    if (r.status === 409 && b.status === "unavailable" && b.workshop === payload.workshop &&
        b.quantity === payload.quantity) {
      return { status: "unavailable" };
    }
    return null;
  }

  function outcomeMessage(intent) {
    const p = intent.payload;
    return intent.outcome.status === "reserved" ? ["reserved", p.quantity, workshopTitle(p.workshop)] : ["unavailable", p.quantity, workshopTitle(p.workshop)];
  }

  function workshopTitle(id) {
    const w = state.workshops.find((x) => x.id === id);
    return w ? w.title : id;
  }

  // onCancel starts (or retries) the cancellation of the reservation just
  // made: its cancel intent is kept before the first send, and a retry sends
  // the same key.
  async function onCancel() {
    if (state.sending) return; // A second click while sending does nothing.
    const intent = state.intent;
    if (!intent || !intent.outcome || intent.outcome.status !== "reserved") return;
    if (!state.cancel) {
      const cancel = { operation: crypto.randomUUID(), reservation_id: intent.outcome.reservation_id, actor: state.actor };
      try {
        saveCancel(cancel); // Before the first send, or not at all.
      } catch (e) {
        state.notice = ["noStorage"];
        render();
        return;
      }
      state.cancel = cancel;
      state.notice = null;
    } else if (state.cancel.outcome) {
      return; // Settled: only "new intent" leads on.
    }
    await sendCancel(state.cancel);
  }

  async function sendCancel(cancel) {
    state.sending = true;
    state.message = ["cancelling"];
    render();
    let r;
    try {
      r = await api("POST", "/api/v1/reservations/" + encodeURIComponent(cancel.reservation_id) + "/cancel", {
        headers: { "Idempotency-Key": cancel.operation },
      });
    } catch (e) {
      r = { status: 0, body: undefined }; // Network error: no answer at all.
    }
    state.sending = false;
    const outcome = cancelAuthoritative(r, cancel);
    if (outcome) {
      cancel.outcome = outcome;
      try {
        saveCancel(cancel);
      } catch (e) {
        // The answer is shown; keeping it for a reload is best effort.
      }
      state.message = cancelMessage(cancel);
    } else {
      state.message = [r.status === 401 ? "cancelUnclearSignIn" : "cancelUnclear"];
    }
    render();
    (outcome ? el.newIntent : el.cancel).focus();
    await loadWorkshops(); // Availability may have changed.
    render();
  }

  // cancelAuthoritative returns the settled outcome of an answer to a
  // cancellation, or null when it does not say for sure what happened.
  function cancelAuthoritative(r, cancel) {
    const b = answerBody(r);
    if (!b || b.reservation_id !== cancel.reservation_id) return null;
    if (r.status === 200 && b.status === "cancelled") return { status: "cancelled" };
    if (r.status === 409 && b.status === "already_cancelled") return { status: "already_cancelled" };
    return null;
  }

  function cancelMessage(cancel) {
    if (cancel.outcome.status === "already_cancelled") return ["alreadyCancelled"];
    const p = state.intent.payload;
    return ["cancelled", p.quantity, workshopTitle(p.workshop)];
  }

  function onNewIntent() {
    if (state.cancel && !state.cancel.outcome) return; // An open cancellation first needs its answer.
    try {
      clearIntent();
    } catch (e) {
      // Nothing kept, nothing to clear.
    }
    state.intent = null;
    state.cancel = null;
    state.message = null;
    state.notice = null;
    render();
    el.workshop.focus();
    loadWorkshops().then(render);
  }

  function switchLanguage() {
    state.lang = state.lang === "de" ? "en" : "de";
    try {
      localStorage.setItem(LANG_KEY, state.lang);
    } catch (e) {
      // The choice lasts for this page only.
    }
    render();
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
      opt.textContent = w ? t("option", w) : id;
      el.workshop.append(opt);
    }
    if (keep && ids.includes(keep)) el.workshop.value = keep;
  }

  function render() {
    document.documentElement.lang = state.lang;
    document.title = t("title");
    for (const node of document.querySelectorAll("[data-text]")) {
      node.textContent = t(node.dataset.text);
    }
    el.lang.textContent = t("langSwitch");
    el.lang.lang = state.lang === "de" ? "en" : "de";
    el.actor.hidden = !state.actor;
    el.actor.textContent = state.actor ? t("signedInAs", state.actor) : "";

    renderOptions();
    applyLimits();
    const intent = state.intent;
    if (intent) el.quantity.value = String(intent.payload.quantity);
    const locked = Boolean(intent);
    el.workshop.disabled = locked;
    el.quantity.disabled = locked;

    const settled = Boolean(intent && intent.outcome);
    const reserved = settled && intent.outcome.status === "reserved";
    const cancel = state.cancel;
    const cancelOpen = Boolean(cancel && !cancel.outcome);
    el.submit.hidden = settled;
    el.submit.disabled = state.sending || (!intent && state.workshops.length === 0);
    el.submit.textContent = intent && !settled ? t("retry") : t("reserve");
    el.cancel.hidden = !reserved || Boolean(cancel && cancel.outcome);
    el.cancel.disabled = state.sending;
    el.cancel.textContent = cancelOpen ? t("retryCancel") : t("cancel");
    el.newIntent.hidden = !settled || cancelOpen;
    if (settled) {
      el.newIntent.textContent = intent.outcome.status === "reserved" ? t("anotherReservation") : t("changeSelection");
    }
    el.receipt.hidden = !(settled && intent.outcome.status === "reserved");
    el.receipt.textContent = el.receipt.hidden ? "" : t("receipt", intent.outcome.reservation_id);
    el.status.textContent = state.message ? t(...state.message) : "";
    el.status.dataset.kind = state.message ? state.message[0] : "";
    el.notice.hidden = !state.notice;
    el.notice.textContent = state.notice ? t(...state.notice) : "";
    el.pageError.hidden = !state.pageError;
    el.pageError.textContent = state.pageError ? t(...state.pageError) : "";
  }

  start();
})();
