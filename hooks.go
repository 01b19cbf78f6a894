package laurel

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
)

// Webhooks post the results of closed periods (results.go) to the game's servers, signed
// (docs/design.md, "Results and webhooks"). These are the hooks and deliveries as the API
// shows them; package webhook keeps them and sends them.

// Hook is a webhook: an URL that the results of closed periods are posted to.
type Hook struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Secret    string   `json:"secret"` // signs each delivery; the API never shows it
	Boards    []string `json:"boards,omitempty"`
	Flags     bool     `json:"flags,omitempty"` // also told of flags opened, held more events and resolved
	CreatedAt int64    `json:"created_at"`
}

// HookSpec creates or updates a hook: a nil field keeps its current value.
type HookSpec struct {
	URL    *string  `json:"url,omitempty"`
	Secret *string  `json:"secret,omitempty"`
	Boards []string `json:"boards,omitzero"` // [] hears every board
	Flags  *bool    `json:"flags,omitempty"`
}

// Limits of hooks.
const (
	MaxHookURL      = 2048
	MinHookSecret   = 16
	MaxHookSecret   = 256
	MaxHookBoards   = 100
	MaxHooks        = 100
	ResultsPartSize = 1000 // rewarded members per delivery
)

// Apply returns the hook that spec makes of current (nil: a new hook created at now).
func (spec HookSpec) Apply(id string, current *Hook, now int64) (Hook, error) {
	if err := ValidateHookID(id); err != nil {
		return Hook{}, err
	}
	h := Hook{ID: id, CreatedAt: now}
	if current != nil {
		h = *current
	}
	if spec.URL != nil {
		u, err := url.Parse(*spec.URL)
		if err != nil || len(*spec.URL) > MaxHookURL || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
			return Hook{}, FieldErrorf(EInvalid, "url", "must be an absolute http or https URL of at most %d bytes, with no user or fragment", MaxHookURL)
		}
		h.URL = *spec.URL
	}
	if spec.Secret != nil {
		if n := len(*spec.Secret); n < MinHookSecret || n > MaxHookSecret {
			return Hook{}, FieldErrorf(EInvalid, "secret", "must be %d to %d bytes", MinHookSecret, MaxHookSecret)
		}
		h.Secret = *spec.Secret
	}
	if spec.Boards != nil {
		if len(spec.Boards) > MaxHookBoards {
			return Hook{}, FieldErrorf(EInvalid, "boards", "must list at most %d boards", MaxHookBoards)
		}
		for i, b := range spec.Boards {
			if err := ValidateBoardID(b); err != nil {
				return Hook{}, FieldErrorf(EInvalid, "boards["+strconv.Itoa(i)+"]", "%s", ErrorMessage(err))
			}
		}
		h.Boards = slices.Compact(slices.Sorted(slices.Values(spec.Boards)))
		if len(h.Boards) == 0 {
			h.Boards = nil
		}
	}
	if spec.Flags != nil {
		h.Flags = *spec.Flags
	}
	switch {
	case h.URL == "":
		return Hook{}, FieldErrorf(EInvalid, "url", "is required")
	case h.Secret == "":
		return Hook{}, FieldErrorf(EInvalid, "secret", "is required: receivers check each delivery's signature with it")
	}
	return h, nil
}

// Hears reports whether the hook is told of board.
func (h *Hook) Hears(board string) bool {
	return len(h.Boards) == 0 || slices.Contains(h.Boards, board)
}

// ValidateHookID checks a hook id: the syntax of a board id.
func ValidateHookID(id string) error {
	if err := ValidateBoardID(id); err != nil {
		return FieldErrorf(EInvalid, "hook", "must match [a-z0-9][a-z0-9_.-]{0,63}")
	}
	return nil
}

// Webhooks are a store's webhooks and their deliveries, as the API manages them (docs/api.md,
// "Webhooks"). Package webhook implements it (its Outbox), over the store's Records.
type Webhooks interface {
	Put(ctx context.Context, id string, spec HookSpec) (h Hook, created bool, err error)
	Hook(ctx context.Context, id string) (Hook, error)
	List(ctx context.Context) ([]Hook, error)
	Delete(ctx context.Context, id string) error
	// Deliveries lists a hook's deliveries by id after after, of one state unless state is "".
	Deliveries(ctx context.Context, hook, state, after string, limit int) ([]Delivery, error)
	Delivery(ctx context.Context, hook, id string) (Delivery, error)
	// Replay makes a delivery pending again, to be sent at once.
	Replay(ctx context.Context, hook, id string) (Delivery, error)
	// ForgetBoard forgets what the hooks know of a board just deleted, so that a board made
	// again under its id is told of from its first period.
	ForgetBoard(ctx context.Context, board string) error
}

// Delivery states.
const (
	DeliveryPending   = "pending"   // to be sent at NextAt
	DeliveryDelivered = "delivered" // a receiver answered 2xx
	DeliveryFailed    = "failed"    // every attempt failed; a replay sends it again
)

// Delivery is one post of one part of a closed period's results to one hook.
type Delivery struct {
	ID          string          `json:"id"` // hook:board:window:period:part, then ~ and the board's making for a board made again (deliveryID)
	Hook        string          `json:"hook"`
	Board       string          `json:"board"`
	Window      string          `json:"window"`
	Period      string          `json:"period"`
	Part        int             `json:"part"` // 1 … Parts
	Parts       int             `json:"parts"`
	State       string          `json:"state"`
	Attempts    int             `json:"attempts"`
	NextAt      int64           `json:"next_at"`     // pending: when the next attempt may begin
	LeaseUntil  int64           `json:"lease_until"` // an attempt in progress holds it until then
	LastStatus  int             `json:"last_status,omitempty"`
	LastError   string          `json:"last_error,omitempty"`
	CreatedAt   int64           `json:"created_at"`
	DeliveredAt int64           `json:"delivered_at,omitempty"`
	Body        json.RawMessage `json:"-"` // what is posted, frozen when the delivery was made

}

// FlagDelivery is what a delivery of a flag's notice posts.
type FlagDelivery struct {
	Delivery, Hook string
	Notice         FlagNotice
}

// ResultsPart is what one delivery posts: a part of a closed period's results.
type ResultsPart struct {
	Delivery    string
	Hook        string
	Part, Parts int
	Results     Results // Results.Results holds the part's members only
}
