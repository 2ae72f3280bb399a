// Command app is the product team's backend: the HTTP API (`app serve`), the operator commands
// that call the same services, and a standalone mock server (`app mock serve`).
package main

import (
	"os"

	"github.com/acme/app/cmd"
)

func main() {
	os.Exit(cmd.Execute())
}
