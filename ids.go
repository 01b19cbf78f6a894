package laurel

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Limits on names and documents (docs/design.md).
const (
	MaxBoardID        = 64
	MaxMemberID       = 128
	MaxEventID        = 128
	MaxName           = 128
	MaxMemberMetadata = 2 << 10
)

// ValidateBoardID checks a board id: [a-z0-9][a-z0-9_.-]{0,63}.
func ValidateBoardID(id string) error {
	if len(id) == 0 || len(id) > MaxBoardID {
		return FieldErrorf(EInvalid, "board", "must be 1 to %d characters", MaxBoardID)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '_' || c == '.' || c == '-')
		if !ok {
			return FieldErrorf(EInvalid, "board", "must match [a-z0-9][a-z0-9_.-]{0,63}")
		}
	}
	return nil
}

// ValidateMember checks a member id: 1 to 128 bytes of UTF-8 with no control character and
// no '/'.
func ValidateMember(field, id string) error {
	if len(id) == 0 || len(id) > MaxMemberID {
		return FieldErrorf(EInvalid, field, "must be 1 to %d bytes", MaxMemberID)
	}
	if strings.IndexByte(id, '/') >= 0 {
		return FieldErrorf(EInvalid, field, "must not contain '/'")
	}
	return validateText(field, id, MaxMemberID)
}

// ValidateEventID checks an event id: up to 128 bytes of UTF-8 with no control character.
// The empty id means the event has none.
func ValidateEventID(field, id string) error { return validateText(field, id, MaxEventID) }

// ValidateGivenEventID checks an event id a request gives: as ValidateEventID, and not empty
// (an event without an id leaves it out; an empty one was taken for none, and its retries
// counted again).
func ValidateGivenEventID(field, id string) error {
	if id == "" {
		return FieldErrorf(EInvalid, field, "must not be empty: leave it out for an event without one")
	}
	return ValidateEventID(field, id)
}

// ValidateName checks a profile name: up to 128 bytes of UTF-8 with no control character.
func ValidateName(field, name string) error { return validateText(field, name, MaxName) }

// validateText checks a display text or id: valid UTF-8, no control characters, at most max
// bytes.
func validateText(field, s string, max int) error {
	if len(s) > max {
		return FieldErrorf(EInvalid, field, "must be at most %d bytes", max)
	}
	if !utf8.ValidString(s) {
		return FieldErrorf(EInvalid, field, "must be valid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || r >= 0x7f && r < 0xa0 {
			return FieldErrorf(EInvalid, field, "must not contain control characters")
		}
	}
	return nil
}

// ValidateMetadata checks that raw is a JSON object of at most max bytes, and returns it
// compacted.
func ValidateMetadata(field string, raw json.RawMessage, max int) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil || buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return nil, FieldErrorf(EInvalid, field, "must be a JSON object")
	}
	if buf.Len() > max {
		return nil, FieldErrorf(EInvalid, field, "must be at most %d bytes", max)
	}
	return buf.Bytes(), nil
}

// ValidateProfile checks a change to a member's profile and returns it with its metadata
// compacted.
func ValidateProfile(member string, spec ProfileSpec) (ProfileSpec, error) {
	if err := ValidateMember("member", member); err != nil {
		return spec, err
	}
	if spec.Name != nil {
		if err := ValidateName("name", *spec.Name); err != nil {
			return spec, err
		}
	}
	if spec.Metadata != nil {
		m, err := ValidateMetadata("metadata", spec.Metadata, MaxMemberMetadata)
		if err != nil {
			return spec, err
		}
		spec.Metadata = m
	}
	return spec, nil
}

// ValidateRetract checks the arguments of a retraction: a board and a non-empty event id.
func ValidateRetract(board, id string) error {
	if err := ValidateBoardID(board); err != nil {
		return err
	}
	return ValidateGivenEventID("id", id)
}
