// Command reservechaos runs reserve's seeded reliability campaign; see
// package chaos.
package main

import (
	"os"

	"github.com/reserve/reserve/internal/chaos"
)

func main() {
	os.Exit(chaos.Main(os.Args[1:], os.Stdout, os.Stderr))
}
