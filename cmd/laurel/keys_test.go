package main

import (
	"encoding/json"
	"slices"
	"testing"
)

// FuzzKeysFile: whatever the file holds, reading it never panics; what it accepts it accepts
// as written (written out again and read back, the same keys), and every key it accepts can be
// sent in an Authorization header.
func FuzzKeysFile(f *testing.F) {
	f.Add([]byte(`{"admin_keys": ["a"], "write_keys": ["w1", "w2"], "read_keys": [], "public_read": true}`))
	f.Add([]byte(`{"Admin_Keys": ["a"]}`))
	f.Add([]byte(`{"read_keys": ["k\u0000"]}`))
	f.Add([]byte("{\"read_keys\": [\"k\xff\"]}"))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		kf, err := parseKeysFile(data)
		if err != nil {
			return
		}
		for _, k := range slices.Concat(kf.AdminKeys, kf.WriteKeys, kf.ReadKeys) {
			if checkKey(k) != nil {
				t.Fatalf("accepted the key %q", k)
			}
		}
		again, err := json.Marshal(kf)
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseKeysFile(again)
		if err != nil {
			t.Fatalf("%s, accepted, then written out as %s: %v", data, again, err)
		}
		if !slices.Equal(back.AdminKeys, kf.AdminKeys) || !slices.Equal(back.WriteKeys, kf.WriteKeys) || !slices.Equal(back.ReadKeys, kf.ReadKeys) || back.PublicRead != kf.PublicRead {
			t.Fatalf("%s read as %+v, written out and read back as %+v", data, kf, back)
		}
	})
}
