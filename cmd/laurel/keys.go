package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	lhttp "github.com/laurel/laurel/http"
)

// keysFile is what `serve -config` reads: the API's keys and whether reads are public, as an
// alternative to the environment (docs/api.md, "Keys"), so that keys need not sit in a process's
// environment. Keys from both are accepted; reads are public if either says so.
type keysFile struct {
	AdminKeys  []string `json:"admin_keys"`
	WriteKeys  []string `json:"write_keys"`
	ReadKeys   []string `json:"read_keys"`
	PublicRead bool     `json:"public_read"`
}

// serveKeys returns the keys of the environment and of the file at path ("" for none), and
// whether reads need no key. It reports whether the file can be read by others than its
// owner, which a key file should not be.
func serveKeys(path string) (keys lhttp.Keys, publicRead, exposed bool, err error) {
	keys = lhttp.Keys{Admin: keyList("LAUREL_ADMIN_KEY"), Write: keyList("LAUREL_WRITE_KEY"), Read: keyList("LAUREL_READ_KEY")}
	publicRead = os.Getenv("LAUREL_PUBLIC_READ") == "true"
	if path == "" {
		return keys, publicRead, false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return keys, false, false, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return keys, false, false, err
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return keys, false, false, err
	}
	var kf keysFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kf); err != nil {
		return keys, false, false, fmt.Errorf("%s: %v", path, err)
	}
	if dec.More() {
		return keys, false, false, fmt.Errorf("%s: more than one JSON object", path)
	}
	for _, list := range []struct {
		field string
		keys  []string
		into  *[]string
	}{{"admin_keys", kf.AdminKeys, &keys.Admin}, {"write_keys", kf.WriteKeys, &keys.Write}, {"read_keys", kf.ReadKeys, &keys.Read}} {
		for _, k := range list.keys {
			if strings.TrimSpace(k) != k || k == "" || strings.Contains(k, ",") {
				return keys, false, false, fmt.Errorf("%s: %s: a key must be non-empty, without spaces at its ends or commas", path, list.field)
			}
			*list.into = append(*list.into, k)
		}
	}
	return keys, publicRead || kf.PublicRead, info.Mode().Perm()&0o044 != 0, nil
}
