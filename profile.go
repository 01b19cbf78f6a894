package laurel

import "encoding/json"

// Profile is a member's profile, shared by all boards.
type Profile struct {
	Member   string
	Name     string
	Metadata json.RawMessage
	Hidden   bool
}

// ProfileSpec sets a profile: a nil field keeps its current value.
type ProfileSpec struct {
	Name     *string
	Metadata json.RawMessage
}
