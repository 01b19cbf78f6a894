// Package webhook delivers the results of closed periods to the game's servers (docs/design.md,
// "Results and webhooks"). The Outbox keeps the hooks and their deliveries in a store's
// laurel.Records and owns every rule of them: what is due, made once whatever the nodes and
// crashes, and when it is tried again. The Dispatcher runs the loop that collects, claims and
// finishes deliveries, and signs and posts each body; it decides nothing of what is due.
package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/laurel/laurel"
)

// The headers of a delivery. A receiver checks the signature (Verify), rejects a timestamp
// too far from its clock (a replayed request), and applies each delivery id once.
const (
	HeaderDelivery  = "Laurel-Delivery"
	HeaderTimestamp = "Laurel-Timestamp" // unix seconds of the attempt
	HeaderSignature = "Laurel-Signature" // v1=hex(HMAC-SHA256(secret, timestamp + "." + body))
)

// Sign returns the signature header of body sent at ts (unix seconds) with secret.
func Sign(secret string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte("."))
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a delivery's headers against its body and secret: the signature must match
// and the timestamp lie within tolerance of now.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return errors.New("webhook: no valid " + HeaderTimestamp)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("webhook: timestamp %d is %v from now: a replay, or a skewed clock", ts, d.Round(time.Second))
	}
	if !hmac.Equal([]byte(h.Get(HeaderSignature)), []byte(Sign(secret, ts, body))) {
		return errors.New("webhook: the signature does not match")
	}
	return nil
}

// Dispatcher sends the deliveries of Outbox until its context ends.
type Dispatcher struct {
	Outbox *Outbox
	Client *http.Client  // nil: one with Timeout, following no redirect
	Every  time.Duration // how often it looks for work; zero is a second
	// Timeout bounds an attempt; zero is 10 s. A claim's lease is three times as long.
	Timeout  time.Duration
	Parallel int // attempts at once; zero is 4
	Log      *slog.Logger

	// OnAttempt, when set, is called after each attempt with the delivery as recorded.
	OnAttempt func(laurel.Delivery)
}

// Run collects and sends deliveries every d.Every until ctx ends. A store that fails is
// logged once per change of state and tried again at the next tick.
func (d *Dispatcher) Run(ctx context.Context) {
	timeout := cmp.Or(d.Timeout, 10*time.Second)
	client := d.Client
	if client == nil {
		client = &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tick := time.NewTicker(cmp.Or(d.Every, time.Second))
	defer tick.Stop()
	var failing bool
	for {
		err := d.pass(ctx, client, timeout, log)
		if ctx.Err() != nil {
			return
		}
		if (err != nil) != failing {
			failing = err != nil
			if failing {
				log.Warn("webhooks: the store does not answer; deliveries wait", "err", err)
			} else {
				log.Info("webhooks: the store answers again")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// pass makes the deliveries of newly closed periods and sends those due.
func (d *Dispatcher) pass(ctx context.Context, client *http.Client, timeout time.Duration, log *slog.Logger) error {
	made, err := d.Outbox.Collect(ctx)
	if made > 0 {
		log.Info("webhooks: deliveries made", "count", made)
	}
	if err != nil {
		return err
	}
	parallel := cmp.Or(d.Parallel, 4)
	due, err := d.Outbox.Claim(ctx, 4*parallel, 3*timeout)
	if err != nil && len(due) == 0 {
		return err
	}
	hooks := map[string]laurel.Hook{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for _, dl := range due {
		h, ok := hooks[dl.Hook]
		if !ok {
			if h, err = d.Outbox.Hook(ctx, dl.Hook); err != nil {
				continue // deleted meanwhile: Delete removes its deliveries
			}
			hooks[dl.Hook] = h
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			status, failure := post(ctx, client, h, dl.Delivery)
			if failure != "" && ctx.Err() != nil {
				// Stopped by this node's shutdown, not by the receiver: no attempt spent.
				if err := d.Outbox.Abandon(context.WithoutCancel(ctx), dl); err != nil {
					log.Warn("webhooks: giving back an attempt", "delivery", dl.ID, "err", err)
				}
				return
			}
			done, err := d.Outbox.Finish(context.WithoutCancel(ctx), dl, status, failure)
			if err != nil {
				log.Warn("webhooks: recording an attempt", "delivery", dl.ID, "err", err)
				return // the lease ends, and it is sent again
			}
			if failure != "" {
				log.Warn("webhooks: an attempt failed", "delivery", dl.ID, "hook", h.ID, "attempt", dl.Attempts, "state", done.State, "err", failure)
			}
			if d.OnAttempt != nil {
				d.OnAttempt(done)
			}
		}()
	}
	wg.Wait()
	return nil
}

// post sends one attempt of a delivery and says how it went.
func post(ctx context.Context, client *http.Client, h laurel.Hook, d laurel.Delivery) (status int, failure string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(d.Body))
	if err != nil {
		return 0, err.Error()
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "laurel-webhook/1")
	req.Header.Set(HeaderDelivery, d.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(h.Secret, ts, d.Body))
	resp, err := client.Do(req)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			ue.URL = redacted(req.URL)
		}
		return 0, err.Error()
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(bytes.ToValidUTF8(snippet, nil)))
		return resp.StatusCode, fmt.Sprintf("the receiver answered %s: %q", resp.Status, msg)
	}
	return resp.StatusCode, ""
}

// redacted is u as a failure may tell it (the log, a delivery's last_error): without its user
// and password and with its query elided, where receivers put their credentials.
func redacted(u *url.URL) string {
	r := *u
	r.User = nil
	if r.RawQuery != "" {
		r.RawQuery = "…"
	}
	r.Fragment, r.RawFragment = "", ""
	return r.String()
}
