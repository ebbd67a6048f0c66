// Package engine is the domain of reserve: workshops, reservations, operation
// receipts, the rules of the request contract, the payload fingerprint and
// the one decision that turns an idempotent reservation request into exactly
// one effect. Decoding request bodies and refusing what the transport
// carries (a missing key, a media type, a body's size or framing, a route)
// are the HTTP edge's, in package api and the server, not the engine's.
//
// The decision "receipt? fingerprint? workshop? capacity? insert and store the
// receipt" is written once, in Engine.Reserve, against the narrow Store and Tx
// interfaces. Every store (bbolt, and any later one) only provides primitive
// reads and writes inside one serializable transaction, and every front end
// (HTTP server, CLI, browser) goes through the Engine.
//
// This package must not import bbolt, net/http, cobra or any other adapter.
package engine
