package laurel_test

import (
	"strings"
	"testing"

	"github.com/laurel/laurel"
)

func TestValidateMember(t *testing.T) {
	for _, id := range []string{"alice", "Ålice Smith", "日本", "a b.c-d_e", strings.Repeat("x", 128), "🦀"} {
		if err := laurel.ValidateMember("member", id); err != nil {
			t.Errorf("ValidateMember(%q) = %v, want nil", id, err)
		}
	}
	for _, id := range []string{"", strings.Repeat("x", 129), "a/b", "a\nb", "a\x00", "\xff", "a\u0085b"} {
		err := laurel.ValidateMember("events[2].member", id)
		var e *laurel.Error
		if !asError(err, &e) || e.Code != laurel.EInvalid || e.Field != "events[2].member" {
			t.Errorf("ValidateMember(%q) = %v, want invalid_argument on events[2].member", id, err)
		}
	}
}

func TestValidateMetadata(t *testing.T) {
	got, err := laurel.ValidateMetadata("metadata", []byte(` { "country" : "SE" } `), 2048)
	if err != nil || string(got) != `{"country":"SE"}` {
		t.Fatalf("got %s, %v", got, err)
	}
	for _, raw := range []string{`[]`, `"x"`, `1`, `null`, `{`, ``} {
		if _, err := laurel.ValidateMetadata("metadata", []byte(raw), 2048); laurel.ErrorCode(err) != laurel.EInvalid {
			t.Errorf("ValidateMetadata(%s) = %v, want invalid_argument", raw, err)
		}
	}
}
