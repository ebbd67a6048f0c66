package server

import "github.com/reserve/reserve/internal/faults"

// RoutePatterns returns the patterns of the route table of a server with
// fault injection, so every route.
func RoutePatterns() []string {
	var ps []string
	for _, rt := range New(Config{Faults: faults.New(nil)}).routes() {
		ps = append(ps, rt.pattern)
	}
	return ps
}
