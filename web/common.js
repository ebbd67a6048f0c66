// common.js holds what both pages of reserve do alike: the page for
// reserving (app.js) and the organizer's page (admin.js) load it first, and
// each takes from COMMON what it uses. It defines; it does nothing when it
// is loaded.
//
// The session: a login link gives this tab a browser session, which is
// kept in sessionStorage ("reserve.session"), so it belongs to this origin
// (scheme, host and port) and this tab. Every API request carries it as
// "Authorization: Bearer …" and never a cookie (credentials: "omit"), so
// no server on another port of this host can read, replay or plant a
// session, and another tab's sign-in never changes whose session this tab
// sends. Without sessionStorage the session lasts as long as the page.
//
// The rule for settling: only an answer that is one of the authoritative
// answers of ANSWERS (answers.js, generated from the engine's table) for
// its kind of operation, about exactly what was asked, says for sure what
// happened; anything else, also no answer within 15 s, leaves the intent
// open for a retry that sends the same request again.
"use strict";

const COMMON = (function () {
  const SESSION_KEY = "reserve.session";
  const LANG_KEY = "reserve.lang";
  const REQUEST_TIMEOUT_MS = 15000; // See requestTimeout.
  const RESERVATION_ID = /^[0-9a-f]{32}$/;
  const WORKSHOP_ID = /^[a-z][a-z0-9-]{1,40}$/;

  // places and plaetze keep the two languages' texts short.
  const places = (q) => `${q} ${q === 1 ? "place" : "places"}`;
  const plaetze = (q) => `${q} ${q === 1 ? "Platz" : "Plätze"}`;

  // texts returns a page's texts, by language, with those of the frame
  // both pages share (renderFrame's, and the failure to reach the daemon)
  // under each language.
  const FRAME_TEXT = {
    en: {
      langHint: "Switch language",
      langSwitch: "Deutsch",
      signOut: "Sign out",
      signedInAs: (a) => `Signed in as ${a}`,
      unreachable: "The reservation service could not be reached. Reload the page to try again.",
    },
    de: {
      langHint: "Sprache wechseln",
      langSwitch: "English",
      signOut: "Abmelden",
      signedInAs: (a) => `Angemeldet als ${a}`,
      unreachable: "Der Reservierungsdienst ist nicht erreichbar. Laden Sie die Seite neu, um es erneut zu versuchen.",
    },
  };

  function texts(page) {
    return { en: Object.assign({}, FRAME_TEXT.en, page.en), de: Object.assign({}, FRAME_TEXT.de, page.de) };
  }

  // chooseLanguage returns the language chosen earlier on either page, else
  // the browser's: "de" or "en".
  function chooseLanguage() {
    try {
      const saved = localStorage.getItem(LANG_KEY);
      if (saved === "de" || saved === "en") return saved;
    } catch (e) {
      // No storage: fall back to the browser language.
    }
    return (navigator.language || "en").toLowerCase().startsWith("de") ? "de" : "en";
  }

  // otherLanguage returns the language that is not lang, kept for both
  // pages when storage allows.
  function otherLanguage(lang) {
    return keepLanguage(lang === "de" ? "en" : "de");
  }

  // loadKept returns the intents kept in sessionStorage under key (an
  // object of intents by name), leaving out every entry for which
  // ok(name, intent) is false: another actor's, another kind, a malformed
  // one. It throws when storage is unavailable or the record is not JSON.
  function loadKept(key, ok) {
    const raw = sessionStorage.getItem(key);
    const v = raw === null ? {} : JSON.parse(raw);
    const kept = {};
    for (const [name, op] of Object.entries(v && typeof v === "object" ? v : {})) {
      if (op && ok(name, op)) kept[name] = op;
    }
    return kept;
  }

  // session is this tab's browser session, sent as a bearer credential.
  let session = null;

  // loadSession takes up the session this tab kept, if any.
  function loadSession() {
    try {
      session = sessionStorage.getItem(SESSION_KEY);
    } catch (e) {
      session = null; // No storage: no session survives a reload.
    }
  }

  function saveSession(s) {
    session = s;
    try {
      sessionStorage.setItem(SESSION_KEY, s);
    } catch (e) {
      // Kept for this page only.
    }
  }

  function forgetSession() {
    session = null;
    try {
      sessionStorage.removeItem(SESSION_KEY);
    } catch (e) {
      // Nothing kept, nothing to forget.
    }
  }

  // requestTimeout returns how long a request may take, answer included,
  // before the page gives up on it: REQUEST_TIMEOUT_MS, unless a test set
  // window.reserveRequestTimeoutMs (a positive whole number of ms) to
  // shorten it; nothing else sets it, and it is read at every request.
  function requestTimeout() {
    const ms = window.reserveRequestTimeoutMs;
    return Number.isInteger(ms) && ms > 0 ? ms : REQUEST_TIMEOUT_MS;
  }

  // request sends one request to the daemon with this tab's session and
  // never a cookie (credentials: "omit"), so a cookie that any server of
  // this host set has no part in it, and gives up when the whole answer has
  // not arrived within requestTimeout(). It returns {status, body, text,
  // headers}: body is the parsed JSON, null for an empty answer and
  // undefined for one that is not JSON; status 0 is no answer at all (a
  // network error, or none in time), which for an operation leaves its
  // intent open.
  async function request(method, path, headers, body) {
    const h = Object.assign({}, headers);
    if (session) h.Authorization = "Bearer " + session;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), requestTimeout());
    try {
      const init = { method, headers: h, credentials: "omit", cache: "no-store", signal: abort.signal };
      if (body !== undefined) init.body = body;
      const resp = await fetch(path, init);
      const text = await resp.text();
      let parsed;
      try {
        parsed = text === "" ? null : JSON.parse(text);
      } catch (e) {
        parsed = undefined; // Not JSON at all.
      }
      return { status: resp.status, body: parsed, text, headers: resp.headers };
    } catch (e) {
      return { status: 0, body: undefined, text: "", headers: new Headers() };
    } finally {
      clearTimeout(timer);
    }
  }

  // whoami asks whose this tab's session is. It returns {actor, admin}, or
  // {signedIn: false} when there is no session or it has ended (401), or
  // null when the daemon gave no usable answer. Without a session it asks
  // nothing: the daemon knows a browser only by the session it sends (it
  // reads no cookies), so the answer could only be 401.
  async function whoami() {
    if (!session) return { signedIn: false };
    const who = await request("GET", "/api/v1/whoami");
    if (who.status === 401) return { signedIn: false };
    if (who.status !== 200 || !who.body || typeof who.body.actor !== "string") return null;
    const b = who.body;
    return {
      signedIn: true, actor: b.actor, admin: b.admin === true,
      displayName: typeof b.display_name === "string" ? b.display_name : "",
      language: b.language === "de" || b.language === "en" ? b.language : "",
    };
  }

  // saveLanguage stores lang in the signed-in person's profile, so that
  // mails come in it too; the page works on should the daemon refuse.
  async function saveLanguage(lang) {
    await request("PUT", "/api/v1/me", { "Content-Type": "application/json" }, JSON.stringify({ language: lang }));
  }

  // keepLanguage makes lang (from the person's profile) the language of
  // both pages when storage allows, and returns it.
  function keepLanguage(lang) {
    try {
      localStorage.setItem(LANG_KEY, lang);
    } catch (e) {
      // The choice lasts for this page only.
    }
    return lang;
  }

  // signOut ends this tab's session on the daemon, forgets it and loads the
  // page at path. Should the daemon not answer, the session is forgotten
  // all the same and ends by itself when it expires.
  async function signOut(path) {
    await request("DELETE", "/api/v1/sessions/current");
    forgetSession();
    location.replace(path);
  }

  // answerBody returns the body of r when it is one of kind's answers in
  // ANSWERS, sent with its HTTP status, with exactly that answer's members,
  // ids of the right form, a workshop and a quantity; else null.
  function answerBody(kind, r) {
    const b = r.body;
    if (!b || typeof b !== "object" || Array.isArray(b) || typeof b.status !== "string") return null;
    const a = Object.hasOwn(ANSWERS[kind], b.status) ? ANSWERS[kind][b.status] : null;
    if (!a || a[0] !== r.status || a[1] !== Object.keys(b).sort().join(",")) return null;
    if (typeof b.workshop !== "string" || b.workshop === "" || !Number.isInteger(b.quantity) || b.quantity < 1) return null;
    for (const id of ["reservation_id", "hold_id", "entry_id"]) {
      if (id in b && !(typeof b[id] === "string" && RESERVATION_ID.test(b[id]))) return null;
    }
    // A refusal for the limit per person: the limit is at least 1, the
    // places the person had already at least 0. A place on a waiting list
    // counts from 1.
    for (const [n, least] of [["max_per_person", 1], ["already", 0], ["position", 1]]) {
      if (n in b && !(Number.isInteger(b[n]) && b[n] >= least)) return null;
    }
    return b;
  }

  // authoritative returns the settled outcome of an answer to a
  // reservation, or null when the answer does not say for sure what
  // happened: it must be about the workshop and quantity asked for, and a
  // "waiting" answer answers only a request that asked to join the waiting
  // list (payload.waitlist).
  function authoritative(r, payload) {
    const b = answerBody("reserve", r);
    if (!b || b.workshop !== payload.workshop || b.quantity !== payload.quantity) return null;
    if (b.status === "waiting" && payload.waitlist !== true) return null;
    if (b.status === "reserved") return { status: "reserved", reservation_id: b.reservation_id };
    if (b.status === "waiting") return { status: "waiting", entry_id: b.entry_id, position: b.position };
    if (b.status === "limit_reached") return { status: b.status, max_per_person: b.max_per_person, already: b.already };
    return { status: b.status };
  }

  // TARGETS names the member that says what an operation on an existing
  // thing acted on: the reservation cancelled, the waiting list entry left,
  // else the hold confirmed or released.
  const TARGETS = { cancel: "reservation_id", leave_waitlist: "entry_id" };

  // opAuthoritative returns the settled outcome of an answer to a
  // cancellation, confirmation, release or leaving of a waiting list, or
  // null when it does not say for sure what happened: it must be about the
  // reservation (cancel), hold (confirm, release) or entry (leave_waitlist)
  // it was sent for, in a well-formed workshop. op.kind is the kind of
  // operation of the table of answers.
  function opAuthoritative(r, op) {
    const b = answerBody(op.kind, r);
    const target = b && b[Object.hasOwn(TARGETS, op.kind) ? TARGETS[op.kind] : "hold_id"];
    if (!b || target !== op.target || !WORKSHOP_ID.test(b.workshop)) return null;
    return b.status === "reserved" ? { status: "reserved", reservation_id: b.reservation_id } : { status: b.status };
  }

  // LOCALES are the locales dates are written in: day before month and a
  // 24-hour clock in both languages.
  const LOCALES = { en: "en-GB", de: "de-DE" };

  // instant returns the time an RFC 3339 member names, or null.
  function instant(v) {
    const ms = typeof v === "string" ? Date.parse(v) : NaN;
    return Number.isNaN(ms) ? null : new Date(ms);
  }

  // dateFormat returns a formatter of dates and times in lang and in the
  // time zone zone (UTC when empty), named in what it writes; a zone this
  // browser does not know is written as UTC, which is still the right time.
  function dateFormat(lang, zone) {
    const opts = { weekday: "short", day: "numeric", month: "long", year: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" };
    try {
      return new Intl.DateTimeFormat(LOCALES[lang], Object.assign({ timeZone: zone || "UTC" }, opts));
    } catch (e) {
      return new Intl.DateTimeFormat(LOCALES[lang], Object.assign({ timeZone: "UTC" }, opts));
    }
  }

  // whenText returns when workshop w takes place, in its own time zone: its
  // start, or its start and end as a range; "" when it has no start.
  function whenText(lang, w) {
    const start = instant(w.starts_at), end = instant(w.ends_at);
    if (!start) return "";
    const format = dateFormat(lang, w.time_zone);
    return end && end > start ? format.formatRange(start, end) : format.format(start);
  }

  // renderFrame writes what both pages show around their own content in
  // lang; the person is named by name (a display name) when it is not "",
  // lang, with t their texts: the document's language, title and
  // description, every element's data-text, the language switch, whose
  // session this tab has (actor, or none) and the error that stops the
  // page (a message [textKey, ...args], or none). el holds the elements
  // lang, actor and pageError.
  function renderFrame(t, lang, el, actor, pageError, name) {
    document.documentElement.lang = lang;
    document.title = t("title");
    document.querySelector('meta[name="description"]').content = t("description");
    for (const node of document.querySelectorAll("[data-text]")) {
      node.textContent = t(node.dataset.text);
    }
    el.lang.textContent = t("langSwitch");
    el.lang.lang = lang === "de" ? "en" : "de";
    el.actor.hidden = !actor;
    el.actor.textContent = actor ? t("signedInAs", name || actor) : "";
    el.actor.dataset.actor = actor || "";
    el.pageError.hidden = !pageError;
    el.pageError.textContent = pageError ? t(...pageError) : "";
  }

  // newKey returns a new operation key: a UUIDv7, whose first 48 bits are
  // the time in Unix milliseconds and whose other bits (but the version
  // and variant) are random, so that the daemon stores the receipts of one
  // moment next to each other. It needs crypto.getRandomValues, which
  // every browser offers.
  function newKey() {
    const b = crypto.getRandomValues(new Uint8Array(16));
    let ms = Date.now();
    for (let i = 5; i >= 0; i--) {
      b[i] = ms % 256;
      ms = Math.floor(ms / 256);
    }
    b[6] = 0x70 | (b[6] & 0x0f);
    b[8] = 0x80 | (b[8] & 0x3f);
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  return Object.freeze({
    RESERVATION_ID, WORKSHOP_ID, places, plaetze, newKey,
    texts, chooseLanguage, otherLanguage,
    loadKept, loadSession, saveSession, forgetSession, request, whoami, signOut,
    saveLanguage, keepLanguage,
    answerBody, authoritative, opAuthoritative,
    instant, dateFormat, whenText, renderFrame,
  });
})();
