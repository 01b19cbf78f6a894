package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/laurel/laurel"
)

// TestFailureHidesCredentials: a failed attempt's error, which is logged and kept as the
// delivery's last_error, names the receiver without the credentials a URL may carry (its
// user and password, or a key in its query).
func TestFailureHidesCredentials(t *testing.T) {
	h := laurel.Hook{ID: "h", URL: "http://user:PASSWORD@127.0.0.1:1/hook?api_key=RECEIVER-SECRET#frag", Secret: "s"}
	status, failure := post(context.Background(), http.DefaultClient, h, laurel.Delivery{ID: "d", Body: []byte("{}")})
	if status != 0 || failure == "" {
		t.Fatalf("an attempt at a closed port: status %d, failure %q", status, failure)
	}
	for _, secret := range []string{"PASSWORD", "RECEIVER-SECRET", "user", "frag"} {
		if strings.Contains(failure, secret) {
			t.Errorf("the failure tells %q: %s", secret, failure)
		}
	}
	if !strings.Contains(failure, "http://127.0.0.1:1/hook?") {
		t.Errorf("the failure does not name the receiver: %s", failure)
	}
}
