package http

// DecodeEvents exposes the decoding of event submits to the fuzz test.
var DecodeEvents = decodeEvents
