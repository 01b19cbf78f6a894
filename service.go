package laurel

import (
	"context"
	"time"
)

// Service is laurel: the model of docs/design.md behind one interface, implemented by the
// embedded store and by the scale-out one. Every error is an *Error with a code, or internal.
type Service interface {
	PutBoard(ctx context.Context, id string, spec BoardSpec) (b BoardInfo, created bool, err error)
	Board(ctx context.Context, id string) (BoardInfo, error)
	Boards(ctx context.Context) ([]BoardInfo, error)
	DeleteBoard(ctx context.Context, id string) error

	// Submit applies events, possibly on several boards, atomically: all or none.
	Submit(ctx context.Context, events []Event, opts SubmitOptions) ([]EventResult, error)
	Retract(ctx context.Context, board, id string) error

	Page(ctx context.Context, q Query, offset, limit int, r ScoreRange) (Page, error)
	Member(ctx context.Context, q Query, member string) (MemberEntry, error)
	Around(ctx context.Context, q Query, member string, radius int) (Page, error)
	Lookup(ctx context.Context, q Query, members []string) (Page, error)
	// RankOf returns the rank a member reaching score and subscore now would get, and the
	// total.
	RankOf(ctx context.Context, q Query, score, sub int64) (rank, total int, err error)
	// Distribution returns the histogram h of the scores ranked in the span q reads.
	Distribution(ctx context.Context, q Query, h Histogram) (Distribution, error)
	Periods(ctx context.Context, board, window string) ([]PeriodInfo, error)
	// History returns a member's points in window, newest first, at most limit of them.
	History(ctx context.Context, board, window, member string, limit int) ([]HistoryPoint, error)

	PutProfile(ctx context.Context, member string, spec ProfileSpec) (Profile, error)
	Profile(ctx context.Context, member string) (Profile, error)
	DeleteMember(ctx context.Context, member string) error
	Hide(ctx context.Context, member string) error
	Unhide(ctx context.Context, member string) error
}

// AfterWriteGrace is how long what follows a stored write may take past a request's spent
// deadline, by default (AfterWrite).
const AfterWriteGrace = 5 * time.Second

// AfterWrite is the context of what follows a write that was stored (the index brought along,
// what competitions keep cleared): not cancelled with ctx, since an error now would tell the
// caller that what is stored was not, but ending at ctx's deadline or grace from now,
// whichever is later (the request's deadline may be spent by a backend that failed). Without
// a deadline it has none either.
func AfterWrite(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	c := context.WithoutCancel(ctx)
	d, ok := ctx.Deadline()
	if !ok {
		return c, func() {}
	}
	if soon := time.Now().Add(grace); d.Before(soon) {
		d = soon
	}
	return context.WithDeadline(c, d)
}
