package redis

import (
	"context"
	"errors"
	"net"

	"github.com/redis/rueidis"
)

// staleConnections bounds how many closed connections one call may meet in a row: rueidis
// pipelines over up to four connections to one Redis (ClientOption.PipelineMultiplex).
const staleConnections = 4

// do runs call, and again on a fresh connection when the one it used had closed under it.
//
// rueidis notices that an idle connection died only at its next keep-alive ping (a second
// apart), so the first call after Redis restarts can be sent on a connection the old Redis
// closed, and get EOF although the new Redis answers: without this, a node that /readyz
// reports ready would refuse that read. Every call of the index may run twice: reads change
// nothing, and a step is refused when the board is no longer where it found it. A call that
// cannot connect at all is not tried again: Redis is down, and the caller answers 503 at once.
func (x *Index) do(ctx context.Context, call func() rueidis.RedisResult) rueidis.RedisResult {
	r := call()
	for range staleConnections {
		if !closedUnder(ctx, r.NonRedisError()) {
			break
		}
		r = call()
	}
	return r
}

// closedUnder reports whether err says that an open connection closed, rather than that
// Redis could not be reached or did not answer in time, the client was closed or ctx ended.
func closedUnder(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || errors.Is(err, rueidis.ErrClosing) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var timeout net.Error
	if errors.As(err, &timeout) && timeout.Timeout() {
		return false
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}
