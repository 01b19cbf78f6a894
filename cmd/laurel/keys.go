package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

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
	for _, env := range []struct {
		name string
		into *[]string
	}{{"LAUREL_ADMIN_KEY", &keys.Admin}, {"LAUREL_WRITE_KEY", &keys.Write}, {"LAUREL_READ_KEY", &keys.Read}} {
		if *env.into, err = keyList(os.Getenv(env.name)); err != nil {
			return keys, false, false, fmt.Errorf("%s: %w", env.name, err)
		}
	}
	publicRead = os.Getenv("LAUREL_PUBLIC_READ") == "true"
	if path == "" {
		return keys, publicRead, false, nil
	}
	kf, exposed, err := readKeysFile(path)
	if err != nil {
		return keys, false, false, fmt.Errorf("-config %s: %w", path, err)
	}
	keys.Admin = append(keys.Admin, kf.AdminKeys...)
	keys.Write = append(keys.Write, kf.WriteKeys...)
	keys.Read = append(keys.Read, kf.ReadKeys...)
	return keys, publicRead || kf.PublicRead, exposed, nil
}

// keyList reads a comma-separated list of keys (spaces around them trimmed).
func keyList(list string) ([]string, error) {
	var keys []string
	for k := range strings.SplitSeq(list, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if err := checkKey(k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// checkKey refuses a key that a client could not send as it is in "Authorization: Bearer
// <key>": one with spaces, control characters, commas (which separate keys) or anything
// beyond printable ASCII.
func checkKey(k string) error {
	if k == "" {
		return fmt.Errorf("a key must not be empty")
	}
	for i := range len(k) {
		if c := k[i]; c <= ' ' || c > '~' || c == ',' {
			return fmt.Errorf("a key must be printable ASCII without spaces or commas (%q is not)", k[:min(len(k), i+1)]+"…")
		}
	}
	return nil
}

// readKeysFile reads and checks a keys file, and reports whether others than its owner can
// read it.
func readKeysFile(path string) (kf keysFile, exposed bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return kf, false, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return kf, false, err
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return kf, false, err
	}
	kf, err = parseKeysFile(data)
	return kf, info.Mode().Perm()&0o044 != 0, err
}

// parseKeysFile decodes a keys file strictly: one JSON object of the known fields, spelled
// exactly (encoding/json would take "Admin_Keys" too), valid UTF-8, every key sendable.
func parseKeysFile(data []byte) (keysFile, error) {
	var kf keysFile
	if !utf8.Valid(data) {
		return kf, fmt.Errorf("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kf); err != nil {
		return kf, err
	}
	if dec.More() {
		return kf, fmt.Errorf("more than one JSON object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return kf, err
	}
	for name := range fields {
		if !slices.Contains([]string{"admin_keys", "write_keys", "read_keys", "public_read"}, name) {
			return kf, fmt.Errorf("unknown field %q (the fields are admin_keys, write_keys, read_keys and public_read)", name)
		}
	}
	for _, list := range []struct {
		field string
		keys  []string
	}{{"admin_keys", kf.AdminKeys}, {"write_keys", kf.WriteKeys}, {"read_keys", kf.ReadKeys}} {
		for _, k := range list.keys {
			if err := checkKey(k); err != nil {
				return kf, fmt.Errorf("%s: %w", list.field, err)
			}
		}
	}
	return kf, nil
}
