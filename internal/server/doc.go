// Package server is reserve's HTTP API v1: one route table,
// a handler per concern, middleware for logging, metrics, origin and host
// checks, and the one table that maps error codes to HTTP status.
//
// Identity comes from the listener: on the Unix socket the kernel's peer
// credentials name the actor, on TCP a bearer token does. Every decision
// about reservations, workshops and tokens is the engine's; this package only
// translates HTTP to engine calls and back.
//
// It must not import bbolt, cobra or any command tree; the daemon wires it to
// a store and to listeners.
package server
