// Package web holds the browser pages of reserve, embedded into the daemon,
// which serves them on its TCP listener: the form for reserving (index.html,
// app.js, style.css) and the organizer's page (admin.html, admin.js,
// admin.css); both load common.js, what they do alike (the session, the
// request with its timeout, the rule for settling an answer), and the
// generated answers.js before their own script. The form keeps one open intent in sessionStorage and sends it
// with an Idempotency-Key, so double clicks, reloads and lost answers never
// make a second reservation. This package holds only the assets; it must not
// import the server or the engine.
package web

import "embed"

// Assets are the files of the form, served from the root of the listener.
// answers.js is generated from the engine's table of answers.
//
//go:generate go run ../internal/tools/genanswers -o answers.js
//go:embed index.html app.js answers.js common.js style.css favicon.svg admin.html admin.js admin.css
var Assets embed.FS
