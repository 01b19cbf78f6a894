package laurel

import (
	"errors"
	"fmt"
)

// Error codes, as docs/api.md names them. The HTTP layer maps each to a status.
const (
	EInvalid          = "invalid_argument"
	ETooLate          = "too_late"
	EUnauthenticated  = "unauthenticated"
	EPermissionDenied = "permission_denied"
	ENotFound         = "not_found"
	EMethodNotAllowed = "method_not_allowed"
	EConflict         = "conflict"
	ETooLarge         = "payload_too_large"
	ERateLimited      = "rate_limited"
	// EGuardRefused is an event a rule of its board's guard refuses (guard.go).
	EGuardRefused = "guard_refused"
	EUnavailable  = "unavailable"
	// EOutcomeUnknown is a write cut off during its commit whose outcome the store could
	// not learn within the request's deadline: it may be stored. Sent again with the same
	// event ids, it is answered for what is stored (an event stored is a duplicate).
	EOutcomeUnknown = "outcome_unknown"
	EInternal       = "internal"
)

// Error is a failure a client can act on: a code from the list above, a message meant for
// people, and, when one input caused it, the field that did (such as "events[3].value").
type Error struct {
	Code    string
	Message string
	Field   string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("laurel: %s: %s: %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("laurel: %s: %s", e.Code, e.Message)
}

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrorf returns an *Error about one input field.
func FieldErrorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, or EInternal when err is not an *Error: anything the
// domain did not anticipate is internal and its details stay in the log.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return EInternal
}

// ErrorMessage returns the message of err meant for a client, hiding internal details.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	if err == nil {
		return ""
	}
	return "internal error"
}

// ErrNoBoard is the error of an operation on a board that does not exist.
func ErrNoBoard(id string) *Error {
	return FieldErrorf(ENotFound, "board", "no board %q", id)
}
