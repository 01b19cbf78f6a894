package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
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
	// TokenSecrets are the secrets member tokens are signed with, by key id.
	TokenSecrets map[string]string `json:"token_secrets"`
}

// access is what serve lets in: keys, public reads, member tokens' secrets.
type access struct {
	keys         lhttp.Keys
	publicRead   bool
	tokenSecrets map[string][]byte
}

// serveKeys returns the keys of the environment and of the file at path ("" for none), and
// whether reads need no key. It reports whether the file can be read by others than its
// owner, which a key file should not be.
func serveKeys(path string) (a access, exposed bool, err error) {
	for _, env := range []struct {
		name string
		into *[]string
	}{{"LAUREL_ADMIN_KEY", &a.keys.Admin}, {"LAUREL_WRITE_KEY", &a.keys.Write}, {"LAUREL_READ_KEY", &a.keys.Read}} {
		v := os.Getenv(env.name)
		if *env.into, err = keyList(v); err == nil && len(*env.into) == 0 && v != "" {
			err = fmt.Errorf("%q names no key", v) // not left open by a stray comma
		}
		if err != nil {
			return a, false, fmt.Errorf("%s: %w", env.name, err)
		}
	}
	switch v := os.Getenv("LAUREL_PUBLIC_READ"); v {
	case "true":
		a.publicRead = true
	case "false", "":
	default:
		return a, false, fmt.Errorf("LAUREL_PUBLIC_READ: %q: want true or false", v)
	}
	if a.tokenSecrets, err = tokenSecretList(os.Getenv("LAUREL_TOKEN_SECRETS")); err != nil {
		return a, false, fmt.Errorf("LAUREL_TOKEN_SECRETS: %w", err)
	}
	if path == "" {
		return a, false, nil
	}
	kf, exposed, err := readKeysFile(path)
	if err != nil {
		return a, false, fmt.Errorf("-config %s: %w", path, err)
	}
	a.keys.Admin = append(a.keys.Admin, kf.AdminKeys...)
	a.keys.Write = append(a.keys.Write, kf.WriteKeys...)
	a.keys.Read = append(a.keys.Read, kf.ReadKeys...)
	a.publicRead = a.publicRead || kf.PublicRead
	for kid, secret := range kf.TokenSecrets {
		if a.tokenSecrets == nil {
			a.tokenSecrets = make(map[string][]byte)
		}
		a.tokenSecrets[kid] = []byte(secret)
	}
	return a, exposed, nil
}

// tokenSecretList reads member tokens' secrets: comma-separated kid=secret pairs.
func tokenSecretList(list string) (map[string][]byte, error) {
	var secrets map[string][]byte
	for pair := range strings.SplitSeq(list, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		kid, secret, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("give each secret as kid=secret")
		}
		if err := checkTokenSecret(kid, secret); err != nil {
			return nil, err
		}
		if secrets == nil {
			secrets = make(map[string][]byte)
		}
		secrets[kid] = []byte(secret)
	}
	return secrets, nil
}

// checkTokenSecret refuses an empty key id and a secret shorter than HS256's 256 bits.
func checkTokenSecret(kid, secret string) error {
	if err := checkKey(kid); err != nil || strings.Contains(kid, "=") {
		return fmt.Errorf("a key id must be printable ASCII without spaces, commas or '=' (%q is not)", kid)
	}
	if len(secret) < lhttp.MinTokenSecret {
		return fmt.Errorf("the secret of key id %q is %d bytes: at least %d", kid, len(secret), lhttp.MinTokenSecret)
	}
	if strings.ContainsAny(secret, ", ") {
		return fmt.Errorf("the secret of key id %q has a comma or a space", kid)
	}
	return nil
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
// beyond printable ASCII. It names the byte, never the key (a message reaches logs).
func checkKey(k string) error {
	if k == "" {
		return fmt.Errorf("a key must not be empty")
	}
	for i := range len(k) {
		if c := k[i]; c <= ' ' || c > '~' || c == ',' {
			return fmt.Errorf("a key must be printable ASCII without spaces or commas (byte %d of a key of %d is %q)", i+1, len(k), c)
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
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) { // not in the words of Go's structs
			return kf, fmt.Errorf("%s: a JSON %s where the field takes %s", typeErr.Field, typeErr.Value, jsonKind(typeErr.Type.Kind()))
		}
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
		if !slices.Contains([]string{"admin_keys", "write_keys", "read_keys", "public_read", "token_secrets"}, name) {
			return kf, fmt.Errorf("unknown field %q (the fields are admin_keys, write_keys, read_keys, public_read and token_secrets)", name)
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
	for kid, secret := range kf.TokenSecrets {
		if err := checkTokenSecret(kid, secret); err != nil {
			return kf, fmt.Errorf("token_secrets: %w", err)
		}
	}
	return kf, nil
}

// jsonKind names what a keys file's field takes, in JSON's words.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list of strings"
	case reflect.Map:
		return "an object of strings"
	}
	return "a string"
}
