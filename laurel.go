// Package laurel is the domain of the laurel leaderboard server: boards, windows, periods,
// events, entries and profiles, the rules that relate them, and the interfaces that the
// adapters in its subpackages implement. It does no I/O.
//
// The model it implements is docs/design.md: score events go in; ranked boards come out for
// every time window of a board at once, exact at every instant.
package laurel

// Version is the release of this build; cmd/laurel may override it at link time with
// -ldflags "-X github.com/laurel/laurel.Version=…".
var Version = "0.1.0-dev"
