package http_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/laurel/laurel"
	lhttp "github.com/laurel/laurel/http"
)

// openAPI is the embedded spec, decoded.
func openAPI(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(lhttp.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return doc
}

var httpMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

// resolve follows a local "$ref" ("#/components/…") in doc.
func resolve(t *testing.T, doc map[string]any, v any) map[string]any {
	t.Helper()
	m, _ := v.(map[string]any)
	for m != nil {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		if !strings.HasPrefix(ref, "#/") {
			t.Fatalf("non-local $ref %q", ref)
		}
		var cur any = doc
		for _, k := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			obj, _ := cur.(map[string]any)
			cur = obj[k]
		}
		if cur == nil {
			t.Fatalf("$ref %q resolves to nothing", ref)
		}
		m, _ = cur.(map[string]any)
	}
	return m
}

// TestOpenAPIRoutes checks that the spec documents exactly the server's routes, each with its
// path parameters.
func TestOpenAPIRoutes(t *testing.T) {
	doc := openAPI(t)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.0.") {
		t.Errorf("openapi version %q, want 3.0.x", v)
	}
	param := regexp.MustCompile(`\{([^}]+)\}`)
	var documented []string
	paths, _ := doc["paths"].(map[string]any)
	for path, v := range paths {
		item := resolve(t, doc, v)
		pathParams := param.FindAllStringSubmatch(path, -1)
		for _, method := range httpMethods {
			op, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
			// Every {name} of the path is declared as a required path parameter.
			declared := map[string]bool{}
			for _, list := range []any{item["parameters"], op["parameters"]} {
				ps, _ := list.([]any)
				for _, p := range ps {
					pm := resolve(t, doc, p)
					if pm["in"] == "path" {
						if pm["required"] != true {
							t.Errorf("%s %s: path parameter %v is not required", method, path, pm["name"])
						}
						declared[pm["name"].(string)] = true
					}
				}
			}
			for _, m := range pathParams {
				if !declared[m[1]] {
					t.Errorf("%s %s: path parameter %s is not declared", method, path, m[1])
				}
			}
			if len(declared) != len(pathParams) {
				t.Errorf("%s %s: declares path parameters %v", method, path, declared)
			}
		}
	}
	// The web page's routes (/, /boards/…, /assets/…) serve HTML and /debug/pprof/… serves Go's
	// profiles, not the API: the spec leaves them out.
	routes := slices.DeleteFunc(lhttp.NewServer(nil, lhttp.Config{}).Routes(), func(r string) bool {
		_, path, _ := strings.Cut(r, " ")
		return !strings.HasPrefix(path, "/v1/") && !slices.Contains([]string{"/healthz", "/readyz", "/metrics", "/openapi.json"}, path)
	})
	slices.Sort(documented)
	slices.Sort(routes)
	if !slices.Equal(documented, routes) {
		t.Errorf("spec and server differ\n spec:   %q\n server: %q", documented, routes)
	}
}

// TestOpenAPIErrors checks that every error answer of every operation is an Error, that every
// operation that takes a key can fail the ways every such request can, and that every $ref
// resolves.
func TestOpenAPIErrors(t *testing.T) {
	doc := openAPI(t)
	paths, _ := doc["paths"].(map[string]any)
	errorSchema := resolve(t, doc, map[string]any{"$ref": "#/components/schemas/Error"})
	if errorSchema == nil {
		t.Fatal("no Error schema")
	}
	for path, v := range paths {
		item := resolve(t, doc, v)
		for _, method := range httpMethods {
			op, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			name := strings.ToUpper(method) + " " + path
			responses, _ := op["responses"].(map[string]any)
			hasSuccess := false
			for status, r := range responses {
				if status < "400" {
					hasSuccess = true
					continue
				}
				resp := resolve(t, doc, r)
				content, _ := resp["content"].(map[string]any)
				media, _ := content["application/json"].(map[string]any)
				schema, _ := media["schema"].(map[string]any)
				if schema["$ref"] != "#/components/schemas/Error" {
					t.Errorf("%s: answer %s is not an Error: %v", name, status, schema)
				}
			}
			if !hasSuccess {
				t.Errorf("%s: no success answer", name)
			}
			sec, hasSec := op["security"].([]any)
			public := hasSec && len(sec) == 0
			if public != !strings.HasPrefix(path, "/v1/") {
				t.Errorf("%s: public %v", name, public)
			}
			if !public {
				for _, status := range []string{"401", "403", "429", "500", "503"} {
					if status == "403" && path == "/v1/whoami" {
						continue // any bearer may ask what it may do
					}
					if _, ok := responses[status]; !ok {
						t.Errorf("%s: no %s answer", name, status)
					}
				}
			}
		}
	}
	// Every code of the API has its answer.
	codes := errorSchema["properties"].(map[string]any)["error"].(map[string]any)["properties"].(map[string]any)["code"].(map[string]any)["enum"].([]any)
	for _, c := range []string{laurel.EInvalid, laurel.ETooLate, laurel.EUnauthenticated, laurel.EPermissionDenied, laurel.ENotFound,
		laurel.EConflict, laurel.EGuardRefused, laurel.ETooLarge, laurel.ERateLimited, laurel.EUnavailable, laurel.EOutcomeUnknown, laurel.EInternal} {
		if !slices.Contains(codes, any(c)) {
			t.Errorf("Error.code lacks %s", c)
		}
	}
	// Every $ref resolves.
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["$ref"]; ok {
				resolve(t, doc, x)
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(doc)
}

// TestOpenAPIFlagNotice: a flag's webhook delivery carries exactly the keys the spec's
// FlagNotice and Flag schemas name, each required one present, so that a receiver generated
// from the spec decodes it.
func TestOpenAPIFlagNotice(t *testing.T) {
	doc := openAPI(t)
	schemas := resolve(t, doc, map[string]any{"$ref": "#/components/schemas/Delivery"})["properties"].(map[string]any)
	var bodies []string
	for _, s := range schemas["body"].(map[string]any)["oneOf"].([]any) {
		bodies = append(bodies, s.(map[string]any)["$ref"].(string))
	}
	if !slices.Contains(bodies, "#/components/schemas/FlagNotice") {
		t.Fatalf("a delivery's body may be %v: not a flag's notice", bodies)
	}
	f := &laurel.Flag{ID: "f1", Board: "laps", Member: "ada", Rule: "jump", Reason: "a 45 s lap", State: "confirmed",
		Opened: 1, Resolved: 2, Erased: true, Events: []laurel.FlagEvent{{Rule: "jump", ID: "a2", Value: 45_000, TS: 1}}}
	raw, err := lhttp.EncodeFlagDelivery(laurel.FlagDelivery{Delivery: "d", Hook: "h", Notice: laurel.FlagNotice{Type: "flag.resolved", Flag: f}})
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	matches := func(name string, v map[string]any) {
		t.Helper()
		schema := resolve(t, doc, map[string]any{"$ref": "#/components/schemas/" + name})
		props := schema["properties"].(map[string]any)
		for k := range v {
			if props[k] == nil {
				t.Errorf("%s: the server sends %q, which the spec does not name", name, k)
			}
		}
		for _, k := range schema["required"].([]any) {
			if _, ok := v[k.(string)]; !ok {
				t.Errorf("%s: the spec requires %q, which the server did not send", name, k)
			}
		}
	}
	matches("FlagNotice", body)
	matches("Flag", body["flag"].(map[string]any))
}
