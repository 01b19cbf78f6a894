package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReadmeWalkthroughs runs the walk-throughs of README.md ("## Walk-throughs") against a
// fresh `laurel serve` each, and fails where an answer differs from the one the README shows,
// so that the README stays true.
//
// The section is read as a tiny shell script. Its ```sh blocks may hold:
//   - assignments `NAME=$(date -u [-d 'N days ago' | -d 'N days'] +FORMAT)`, evaluated here
//     (not by a shell) with one clock per run, in effect from there to the end of the section;
//   - `curl [-X METHOD] URL [-d DATA]`, with shell quoting and $NAME expansion; the URL
//     starts with localhost:7300, which becomes the test server's address;
//   - comments; each curl is followed by its answer, a comment that starts with `# → `: an
//     optional status (200 when absent), then JSON (absent: the body is not checked), which
//     may go on over the comment lines that follow until it is complete. $NAME in it stands
//     for the variable's value.
//
// Anything else is an error, so a README that the test cannot follow fails too. A JSON answer
// is matched as a pattern: every object key shown must be present with a matching value (keys
// not shown are not checked), "…" matches any value, and in a list a "…" element matches any
// number of elements. Each "### " heading starts a walk-through, run as a subtest.
func TestReadmeWalkthroughs(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	first, err := parseWalkthroughs(string(src), time.Now())
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if len(first) == 0 {
		t.Fatal("README.md has no walk-throughs")
	}
	for i, w := range first {
		t.Run(w.title, func(t *testing.T) {
			start := time.Now().UTC()
			failures := runWalkthrough(t, w)
			// The answers depend on today's date; if it changed while the walk-through ran,
			// run it again with a new clock rather than report a spurious difference.
			if len(failures) > 0 && time.Now().UTC().YearDay() != start.YearDay() {
				again, err := parseWalkthroughs(string(src), time.Now())
				if err != nil {
					t.Fatal(err)
				}
				failures = runWalkthrough(t, again[i])
			}
			for _, f := range failures {
				t.Error(f)
			}
		})
	}
}

// runWalkthrough runs w against a fresh server and returns its differences from the README.
func runWalkthrough(t *testing.T, w walkthrough) []string {
	base, stop := startServe(t, t.TempDir(), nil)
	defer stop()
	var failures []string
	for _, s := range w.steps {
		status, body := request(t, s.method, base+s.path, s.body)
		where := fmt.Sprintf("README.md:%d: %s %s", s.line, s.method, s.path)
		if status != s.status {
			failures = append(failures, fmt.Sprintf("%s: status %d, README says %d; body %s", where, status, s.status, body))
			continue
		}
		if s.want == nil {
			continue
		}
		got, err := decodeJSON(body)
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: answer is not JSON (%v): %s", where, err, body))
			continue
		}
		if diff := matchJSON("", s.want, got); diff != "" {
			failures = append(failures, fmt.Sprintf("%s: %s\nREADME: %s\nserver: %s", where, diff, s.wantText, body))
		}
	}
	return failures
}

func request(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

type walkthrough struct {
	title string
	steps []step
}

type step struct {
	line               int // of the curl in README.md
	method, path, body string
	status             int
	want               any // the answer's JSON; nil: the body is not checked
	wantText           string
}

// parseWalkthroughs reads the "Walk-throughs" section of readme, evaluating `date` as of now.
func parseWalkthroughs(readme string, now time.Time) ([]walkthrough, error) {
	lines := strings.Split(readme, "\n")
	vars := map[string]string{}
	var out []walkthrough
	in := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case line == "## Walk-throughs":
			in = true
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "## "):
			return out, nil
		case strings.HasPrefix(line, "### "):
			out = append(out, walkthrough{title: strings.TrimPrefix(line, "### ")})
			continue
		case line != "```sh":
			continue
		}
		first := i + 1
		for i++; i < len(lines) && lines[i] != "```"; i++ {
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: unterminated ```sh block", first)
		}
		items, err := lexShell(strings.Join(lines[first:i], "\n")+"\n", first+1, vars, now)
		if err != nil {
			return nil, err
		}
		var w *walkthrough
		if len(out) > 0 {
			w = &out[len(out)-1]
		}
		if err := addSteps(w, items, vars); err != nil {
			return nil, err
		}
	}
	if !in {
		return nil, fmt.Errorf(`no "## Walk-throughs" section`)
	}
	return out, nil
}

var (
	answerStatus = regexp.MustCompile(`^([1-5][0-9][0-9])\b *`)
	assignment   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// addSteps turns the curl commands and answers of one block into steps of w.
func addSteps(w *walkthrough, items []shellItem, vars map[string]string) error {
	answered := true
	for k := 0; k < len(items); k++ {
		it := items[k]
		if it.words == nil {
			text, ok := strings.CutPrefix(it.comment, " → ")
			if !ok {
				continue // an ordinary comment
			}
			if answered {
				return fmt.Errorf("line %d: an answer with no curl before it, or a second answer", it.line)
			}
			answered = true
			s := &w.steps[len(w.steps)-1]
			if m := answerStatus.FindStringSubmatch(text); m != nil {
				s.status, _ = strconv.Atoi(m[1])
				text = text[len(m[0]):]
			}
			if text == "" {
				continue
			}
			for !json.Valid([]byte(expandVars(text, vars))) {
				if k+1 == len(items) || items[k+1].words != nil {
					return fmt.Errorf("line %d: the answer is not complete JSON", it.line)
				}
				k++
				text += "\n" + items[k].comment
			}
			s.wantText = expandVars(text, vars)
			want, err := decodeJSON([]byte(s.wantText))
			if err != nil {
				return fmt.Errorf("line %d: %v", it.line, err)
			}
			s.want = want
			continue
		}
		if len(it.words) == 1 && assignment.MatchString(it.words[0]) {
			continue // an assignment, already made by lexShell
		}
		s, err := curlStep(it)
		if err != nil {
			return err
		}
		if w == nil {
			return fmt.Errorf("line %d: a curl before the first walk-through", it.line)
		}
		if !answered {
			return fmt.Errorf("line %d: the curl before this one has no answer (# → …)", it.line)
		}
		w.steps = append(w.steps, s)
		answered = false
	}
	if !answered {
		return fmt.Errorf("line %d: the last curl of the block has no answer (# → …)", w.steps[len(w.steps)-1].line)
	}
	return nil
}

// curlStep reads `curl [-X METHOD] URL [-d DATA]`.
func curlStep(it shellItem) (step, error) {
	s := step{line: it.line, status: http.StatusOK}
	if it.words[0] != "curl" {
		return s, fmt.Errorf("line %d: %q: only curl and variable assignments can be run", it.line, it.words[0])
	}
	url := ""
	for a := it.words[1:]; len(a) > 0; a = a[1:] {
		switch {
		case (a[0] == "-X" || a[0] == "-d" || a[0] == "--data") && len(a) > 1:
			if a[0] == "-X" {
				s.method = a[1]
			} else {
				s.body = a[1]
			}
			a = a[1:]
		case !strings.HasPrefix(a[0], "-") && url == "":
			url = a[0]
		default:
			return s, fmt.Errorf("line %d: curl argument %q is not understood here", it.line, a[0])
		}
	}
	path, ok := strings.CutPrefix(strings.TrimPrefix(url, "http://"), "localhost:7300/")
	if !ok {
		return s, fmt.Errorf("line %d: the URL %q is not on localhost:7300", it.line, url)
	}
	s.path = "/" + path
	if s.method == "" {
		s.method = "GET"
		if s.body != "" {
			s.method = "POST"
		}
	}
	return s, nil
}

func decodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

const elided = "…"

// matchJSON returns "" if got matches the pattern want (see TestReadmeWalkthroughs), else
// where and how it differs.
func matchJSON(path string, want, got any) string {
	if want == elided {
		return ""
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want an object, got %s", orRoot(path), compact(got))
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s.%s: missing", path, k)
			}
			if d := matchJSON(path+"."+k, wv, gv); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: want a list, got %s", orRoot(path), compact(got))
		}
		if !matchList(path, w, g) {
			return fmt.Sprintf("%s: want %s, got %s", orRoot(path), compact(want), compact(got))
		}
		return ""
	default:
		if !reflect.DeepEqual(want, got) {
			return fmt.Sprintf("%s: want %s, got %s", orRoot(path), compact(want), compact(got))
		}
		return ""
	}
}

func matchList(path string, want, got []any) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == elided {
		for k := 0; k <= len(got); k++ {
			if matchList(path, want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && matchJSON(path, want[0], got[0]) == "" && matchList(path, want[1:], got[1:])
}

func orRoot(path string) string {
	if path == "" {
		return "the answer"
	}
	return path
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

var varRef = regexp.MustCompile(`\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))`)

// expandVars replaces $NAME and ${NAME} by the variables' values, leaving unknown ones.
func expandVars(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		if v, ok := vars[m[1]+m[2]]; ok {
			return v
		}
		return ref
	})
}

// A shellItem is a command (its words, expanded) or a comment line (the text after '#').
type shellItem struct {
	line    int
	words   []string
	comment string
}

// lexShell splits script, whose first line is README line first, into commands and comment
// lines, with POSIX quoting, backslash escapes and line continuations, $NAME, ${NAME} and
// $(date …) expansion. A command that is a single NAME=value word sets vars. Operators
// (; | & < > and the like) and other commands in $( ) are errors.
func lexShell(script string, first int, vars map[string]string, now time.Time) ([]shellItem, error) {
	var items []shellItem
	line := first
	var words []string
	var word strings.Builder
	inWord := false
	cmdLine := line
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCommand := func() {
		endWord()
		if len(words) == 0 {
			return
		}
		if name, value, ok := strings.Cut(words[0], "="); ok && len(words) == 1 && assignment.MatchString(name+"=") {
			vars[name] = value
		}
		items = append(items, shellItem{line: cmdLine, words: words})
		words = nil
	}
	startWord := func() {
		if !inWord && len(words) == 0 {
			cmdLine = line
		}
		inWord = true
	}
	expand := func(i int) (string, int, error) { // s[i] == '$'
		rest := script[i+1:]
		if strings.HasPrefix(rest, "(") {
			end := closingParen(rest)
			if end < 0 {
				return "", 0, fmt.Errorf("line %d: unterminated $(", line)
			}
			inner, err := lexShell(rest[1:end]+"\n", line, vars, now)
			if err != nil {
				return "", 0, err
			}
			if len(inner) != 1 || inner[0].words == nil {
				return "", 0, fmt.Errorf("line %d: $(…) must hold one command", line)
			}
			out, err := evalDate(inner[0].words, now)
			if err != nil {
				return "", 0, fmt.Errorf("line %d: %v", line, err)
			}
			return out, i + 1 + end + 1, nil
		}
		loc := varRef.FindStringSubmatchIndex(script[i:])
		if loc == nil || loc[0] != 0 {
			return "", 0, fmt.Errorf("line %d: a lone $", line)
		}
		var name string
		if loc[2] >= 0 {
			name = script[i:][loc[2]:loc[3]]
		} else {
			name = script[i:][loc[4]:loc[5]]
		}
		v, ok := vars[name]
		if !ok {
			return "", 0, fmt.Errorf("line %d: $%s is not defined", line, name)
		}
		return v, i + loc[1], nil
	}
	for i := 0; i < len(script); {
		c := script[i]
		switch {
		case c == '\n':
			endCommand()
			line++
			i++
		case c == ' ' || c == '\t':
			endWord()
			i++
		case c == '#' && !inWord:
			end := strings.IndexByte(script[i:], '\n')
			if len(words) == 0 {
				items = append(items, shellItem{line: line, comment: script[i+1 : i+end]})
			}
			i += end
		case c == '\\':
			if i+1 < len(script) && script[i+1] == '\n' {
				line++
			} else if i+1 < len(script) {
				startWord()
				word.WriteByte(script[i+1])
			}
			i += 2
		case c == '\'':
			startWord()
			end := strings.IndexByte(script[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated '", line)
			}
			quoted := script[i+1 : i+1+end]
			word.WriteString(quoted)
			line += strings.Count(quoted, "\n")
			i += end + 2
		case c == '"':
			startWord()
			for i++; ; {
				if i >= len(script) {
					return nil, fmt.Errorf(`line %d: unterminated "`, line)
				}
				c := script[i]
				if c == '"' {
					i++
					break
				}
				switch {
				case c == '\\' && i+1 < len(script) && strings.IndexByte("$`\"\\\n", script[i+1]) >= 0:
					if script[i+1] == '\n' {
						line++
					} else {
						word.WriteByte(script[i+1])
					}
					i += 2
				case c == '$':
					v, next, err := expand(i)
					if err != nil {
						return nil, err
					}
					word.WriteString(v)
					i = next
				case c == '`':
					return nil, fmt.Errorf("line %d: backquotes are not supported", line)
				default:
					if c == '\n' {
						line++
					}
					word.WriteByte(c)
					i++
				}
			}
		case c == '$':
			startWord()
			v, next, err := expand(i)
			if err != nil {
				return nil, err
			}
			word.WriteString(v) // unquoted: the values used here hold no spaces to split on
			i = next
		case strings.IndexByte(";|&<>()`*?[", c) >= 0:
			return nil, fmt.Errorf("line %d: %q is not supported here (quote it)", line, c)
		default:
			startWord()
			word.WriteByte(c)
			i++
		}
	}
	endCommand()
	return items, nil
}

// closingParen returns the index in s (which starts with '(') of the ')' that closes it,
// skipping quoted text, or -1.
func closingParen(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case ')':
			return i
		case '\'', '"':
			end := strings.IndexByte(s[i+1:], s[i])
			if end < 0 {
				return -1
			}
			i += end + 1
		}
	}
	return -1
}

var relativeDay = regexp.MustCompile(`^(?:(\d+) days?( ago)?|(today|now|tomorrow|yesterday))$`)

// evalDate evaluates `date -u [-d EXPR] +FORMAT` as GNU date would at now, for the EXPRs
// `N day(s) [ago]`, today, now, tomorrow and yesterday, and the conversions %F %T %Y %m %d
// %H %M %S %%.
func evalDate(words []string, now time.Time) (string, error) {
	if len(words) < 3 || words[0] != "date" || words[1] != "-u" || !strings.HasPrefix(words[len(words)-1], "+") {
		return "", fmt.Errorf("only `date -u [-d EXPR] +FORMAT` is understood here, not %q", strings.Join(words, " "))
	}
	t := now.UTC()
	switch {
	case len(words) == 5 && words[2] == "-d":
		m := relativeDay.FindStringSubmatch(words[3])
		if m == nil {
			return "", fmt.Errorf("date -d %q is not understood here", words[3])
		}
		n, _ := strconv.Atoi(m[1])
		switch {
		case m[2] != "":
			n = -n
		case m[3] == "tomorrow":
			n = 1
		case m[3] == "yesterday":
			n = -1
		}
		t = t.AddDate(0, 0, n)
	case len(words) != 3:
		return "", fmt.Errorf("only `date -u [-d EXPR] +FORMAT` is understood here, not %q", strings.Join(words, " "))
	}
	format := words[len(words)-1][1:]
	var out strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			out.WriteByte(format[i])
			continue
		}
		if i++; i == len(format) {
			return "", fmt.Errorf("date format %q ends with %%", format)
		}
		layout, ok := map[byte]string{'F': "2006-01-02", 'T': "15:04:05", 'Y': "2006", 'm': "01", 'd': "02",
			'H': "15", 'M': "04", 'S': "05", '%': "%"}[format[i]]
		if !ok {
			return "", fmt.Errorf("date format %%%c is not understood here", format[i])
		}
		if layout == "%" {
			out.WriteByte('%')
		} else {
			out.WriteString(t.Format(layout))
		}
	}
	return out.String(), nil
}

// TestWalkthroughsCatchDifferences checks the checker: a walk-through whose answers disagree
// with the server in each way the README could fails on each of them, and only on them.
func TestWalkthroughsCatchDifferences(t *testing.T) {
	readme := strings.Join([]string{
		"## Walk-throughs",
		"```sh",
		"D=$(date -u -d '1 day ago' +%FT00:00:00.000Z)  # a comment",
		"```",
		"### wrong",
		"```sh",
		`curl -X PUT localhost:7300/v1/boards/b -d '{"windows": ["all", "day"], "late_limit": "2d"}'`,
		`# → {"id": "b"}`, // 201, not 200
		"curl -X POST localhost:7300/v1/boards/b/events \\",
		`  -d '{"events": [{"member": "a", "value": 5, "ts": "'$D'"},`,
		`                  {"member": "b", "value": 7, "ts": "'"$D"'"}]}'`,
		`# → {"results": [{"member": "a"}, "…"]}`, // right
		`curl "localhost:7300/v1/boards/b/entries?window=all"`,
		`# → {"total": 2, "entries": [`,
		`#      {"member": "b", "score": 7, "reached_at": "$D"},`,
		`#      {"member": "a", "score": 6}]}`, // 5, not 6
		`curl localhost:7300/v1/boards/b/entries`,
		`# → {"entries": [{"member": "b"}]}`, // a list of two
		`curl "localhost:7300/v1/boards/b/members/a?window=day&at=$D"`,
		`# → {"entry": {"rank": 2, "name": "…"}}`, // a has no name
		`curl localhost:7300/v1/boards/b/members/c`,
		`# → 404 {"error": {"code": "not_found"}}`, // right
		"```",
		"## Next",
		"curl localhost:7300/not/a/walk-through",
	}, "\n")
	ws, err := parseWalkthroughs(readme, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || len(ws[0].steps) != 6 {
		t.Fatalf("parsed %+v; want one walk-through of six steps", ws)
	}
	if s := ws[0].steps[1]; s.line != 9 || s.method != "POST" || !strings.Contains(s.body, `"ts": "`+time.Now().UTC().AddDate(0, 0, -1).Format("2006-01-02")+"T00:00:00.000Z") {
		t.Fatalf("step 2 parsed as %+v", s)
	}
	failures := runWalkthrough(t, ws[0])
	wants := []string{
		"README.md:7: PUT /v1/boards/b: status 201, README says 200",
		"README.md:13: GET /v1/boards/b/entries?window=all: .entries: want",
		"README.md:17: GET /v1/boards/b/entries: .entries: want",
		"README.md:19: GET /v1/boards/b/members/a?window=day&at=",
	}
	if len(failures) != len(wants) {
		t.Fatalf("failures:\n%s\nwant %d of them", strings.Join(failures, "\n"), len(wants))
	}
	for i, f := range failures {
		if !strings.HasPrefix(f, wants[i]) {
			t.Errorf("failure %d: %s\nwant it to start with %s", i, f, wants[i])
		}
	}
	if !strings.Contains(failures[3], ".entry.name: missing") {
		t.Errorf("failure 3 does not say the name is missing: %s", failures[3])
	}

	for _, bad := range []string{
		"curl localhost:7300/x\n",                        // no answer
		"curl localhost:7300/x | jq .\n# → {}\n",         // a pipe
		"curl -H 'X: y' localhost:7300/x\n# → {}\n",      // an option not understood
		"curl localhost:8080/x\n# → {}\n",                // another server
		"curl localhost:7300/x\n# → {\"a\": \n",          // incomplete JSON
		"curl \"localhost:7300/x?at=$NOPE\"\n# → {}\n",   // an unknown variable
		"X=$(date -d '1 week ago' +%F)\n",                // a date not understood
		"rm -rf /tmp/x\n",                                // not curl
		"# → {}\n",                                       // an answer to nothing
		"curl localhost:7300/x\n# → {}\n# → {}\n",        // two answers
		"curl -d '{\"a\": 1} localhost:7300/x\n# → {}\n", // unterminated quote
	} {
		if _, err := parseWalkthroughs("## Walk-throughs\n### w\n```sh\n"+bad+"```\n", time.Now()); err == nil {
			t.Errorf("parsed %q without an error", bad)
		}
	}
}
