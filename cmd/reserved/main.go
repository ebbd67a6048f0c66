// Command reserved is the reserve daemon; see package daemon.
package main

import (
	"os"

	"github.com/reserve/reserve/internal/daemon"
)

func main() {
	os.Exit(daemon.Main())
}
