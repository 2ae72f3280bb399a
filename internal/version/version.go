// Package version holds the program's version, set at build time by the Makefile:
// -ldflags "-X github.com/acme/app/internal/version.Version=1.2.3".
package version

// Version is the semantic version of this build.
var Version = "0.1.0-dev"
