// Package wire reads and writes laurel's JSON where speed matters, by hand: the bodies of
// event submits (DecodeEvents) and the hot answers — pages, member entries, submit results
// (AppendPage, EncodePage, EncodeMemberEntry, AppendResults). Each answers byte for byte as
// encoding/json would (its tests and fuzz targets compare the two), without reflection and
// with no allocation beyond the caller's buffer: over HTTP, reflection and its garbage were
// most of the cost of a top-100 read and of a submit (docs/benchmarks.md).
//
// It is internal to package http: nothing else speaks the wire format, and the API's
// compatibility rests on http's tests, not on this package's surface.
package wire
