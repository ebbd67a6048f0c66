// Command reservectl is the command-line client of reserved; see package cli.
package main

import (
	"os"

	"github.com/reserve/reserve/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}
