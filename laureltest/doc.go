// Package laureltest tests an implementation of [laurel.Service] (a store) against
// docs/design.md: a randomized differential test of the store against a brute-force model of
// §1, recomputed from the raw events at every read, and the fixed cases it found. Every store
// runs the same oracle from its own tests, over its own store, with a [Target]:
//
//	func TestOracle(t *testing.T) { laureltest.Oracle(t, target(t)) }
//
// It is test support, like net/http/httptest: only tests import it.
//
//	go test ./embedded/ -run Oracle -v                 # a fresh seed, printed
//	go test ./embedded/ -run Oracle -v -seed=N -ops=M  # replay a failure
//
// (and the same with the package of another store). -ops defaults to 1200 (150 with
// -short). -skipops=retract,hide,delete,invalid,putboard,config,restart leaves kinds of
// operation out to bisect a failure (it changes the random stream, so a seed then replays
// something else). -keepmode=lenient accepts the other reading of keep (not_found once keep
// newer periods have closed). A failure prints the seed, the operation, the clock, the
// expected and actual entries, and the last 60 operations.
//
// The package registers these flags in its init, -seed and -ops only when they are not
// registered yet, so the test package importing it may read them too (with [flag.Lookup]).
// A test package that registers -seed or -ops itself must do so in an init guarded by
// flag.Lookup, as this package does: its package-level variables are initialized after this
// package's init, and the flag package panics on a flag defined twice.
//
// The model keeps, per board, every accepted event (member, value, ts, id, arrival order,
// retraction time, deletion) and nothing derived: each read filters the events counted in its
// span, aggregates them per member by the board's mode, leaves hidden members out and sorts by
// (score in the board's order, reached_at ascending, member bytes ascending).
//
// Calendar periods close late_limit after their end (late_limit may grow: a period closes at
// the first instant t with t >= end + late_limit(t)); a closed period's content is what was
// counted at that instant: an event retracted at or after the close still counts in it. A
// window added later is computed from the events retained when it was added. A closed period
// stays readable until more than keep newer periods of the window have closed.
package laureltest
