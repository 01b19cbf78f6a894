package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReadmeWalkthroughs runs the walk-throughs of README.md ("## Walk-throughs") in order
// against one fresh `laurel serve`, as a newcomer does, and fails where an answer differs from
// the one the README shows, so that the README stays true (a walk-through that makes a board
// an earlier one made, or reads what an earlier one left, fails here).
//
// The section is read as a tiny shell script. Its ```sh blocks may hold:
//   - assignments `NAME=$(date -u [-d 'N days ago' | -d 'N days'] +FORMAT)`, evaluated here
//     (not by a shell) with one clock per run, in effect from there to the end of the section;
//   - `curl [-X METHOD] URL [-d DATA]`, with shell quoting and $NAME expansion; the URL
//     starts with localhost:7300, which becomes the test server's address;
//   - comments; each curl is followed by its answer, a comment that starts with `# → `: an
//     optional status (200 when absent), then JSON (absent: the body is not checked), which
//     may go on over the comment lines that follow until it is complete. $NAME in it stands
//     for the variable's value; a string "$NAME" of a variable not assigned takes the value
//     the server answered there (an id the server made), for the curls that follow.
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
	base, stop := startServe(t, t.TempDir(), nil)
	defer stop()
	for i, w := range first {
		t.Run(w.title, func(t *testing.T) {
			start := time.Now().UTC()
			failures := runWalkthrough(t, base, w)
			// The answers depend on today's date; if it changed while the walk-through ran,
			// run it again with a new clock rather than report a spurious difference: alone,
			// on a server of its own, as the shared one holds what its first run made.
			if len(failures) > 0 && time.Now().UTC().YearDay() != start.YearDay() {
				again, err := parseWalkthroughs(string(src), time.Now())
				if err != nil {
					t.Fatal(err)
				}
				fresh, stopFresh := startServe(t, t.TempDir(), nil)
				defer stopFresh()
				failures = runWalkthrough(t, fresh, again[i])
			}
			for _, f := range failures {
				t.Error(f)
			}
		})
	}
}

// TestReadmeTopToBottom follows README.md from its top to its walk-throughs as a newcomer
// does, in one data directory, so that a step that contradicts an earlier one fails here (a
// board made again with fewer windows: 409; a read without the key that a server started
// since needs: 401). It runs the commands of the ```sh blocks, in a list item too, in order:
//   - `[NAME=value …] laurel serve [FLAGS]` and `go run ./cmd/laurel serve [FLAGS]` stop the
//     server that runs and start one on the same directory, with those variables (the ones
//     an earlier serve was given, not this one, unset) and flags; a serve of the scale-out
//     store (-postgres, -redis) runs on machines of its own, not here;
//   - every curl (as the walk-throughs', and -H, -N: a stream, read up to its first event)
//     must be answered 2xx;
//   - the other commands (go run … demo, go test, laurel rebuild) leave the server alone and
//     are not run.
func TestReadmeTopToBottom(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := parseTopToBottom(string(src))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if len(cmds) == 0 || cmds[0].serve == nil {
		t.Fatalf("README.md: its top holds no laurel serve before its curls: %+v", cmds)
	}
	for _, f := range followReadme(t, cmds) {
		t.Error(f)
	}
}

// A readmeCommand is a serve or a curl of README.md's top.
type readmeCommand struct {
	line  int
	serve *serveCommand
	curl  step
}

type serveCommand struct {
	env  map[string]string
	args []string
}

// parseTopToBottom reads the serve and curl commands of the ```sh blocks of readme above its
// walk-throughs (see TestReadmeTopToBottom).
func parseTopToBottom(readme string) ([]readmeCommand, error) {
	lines := strings.Split(readme, "\n")
	var out []readmeCommand
	for i := 0; i < len(lines) && lines[i] != "## Walk-throughs"; i++ {
		indent, ok := strings.CutSuffix(lines[i], "```sh")
		if !ok || strings.TrimSpace(indent) != "" {
			continue
		}
		first := i + 1
		var block []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			block = append(block, strings.TrimPrefix(lines[i], indent))
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: unterminated ```sh block", first)
		}
		items, err := lexShell(strings.Join(block, "\n")+"\n", first+1, map[string]string{}, time.Now())
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			words, env := it.words, map[string]string{}
			for len(words) > 0 && assignment.MatchString(words[0]) {
				name, value, _ := strings.Cut(words[0], "=")
				env[name] = value
				words = words[1:]
			}
			var args []string
			switch {
			case len(words) == 0:
				continue // a comment, or an assignment alone
			case words[0] == "curl":
				s, err := curlStep(shellItem{line: it.line, words: words})
				if err != nil {
					return nil, err
				}
				out = append(out, readmeCommand{line: it.line, curl: s})
				continue
			case len(words) >= 2 && words[0] == "laurel" && words[1] == "serve":
				args = words[2:]
			case len(words) >= 4 && strings.Join(words[:4], " ") == "go run ./cmd/laurel serve":
				args = words[4:]
			default:
				continue // leaves the server alone
			}
			if slices.ContainsFunc(args, regexp.MustCompile(`^--?(postgres|redis)(=|$)`).MatchString) {
				continue // the scale-out store, on machines of its own
			}
			if slices.ContainsFunc(args, regexp.MustCompile(`^--?(addr|data)(=|$)`).MatchString) {
				return nil, fmt.Errorf("line %d: a serve elsewhere than on 127.0.0.1:7300 and ./laurel-data: the README's next steps would not reach it", it.line)
			}
			out = append(out, readmeCommand{line: it.line, serve: &serveCommand{env: env, args: args}})
		}
	}
	return out, nil
}

// followReadme runs cmds in order in one data directory and returns where they fail.
func followReadme(t *testing.T, cmds []readmeCommand) []string {
	dir := t.TempDir()
	var failures []string
	base, stop := "", func() int { return 0 }
	given := map[string]bool{} // the variables a serve was given
	for _, c := range cmds {
		if c.serve != nil {
			if code := stop(); code != 0 {
				failures = append(failures, fmt.Sprintf("README.md:%d: the serve before exited %d", c.line, code))
			}
			env := map[string]string{}
			for name := range given {
				env[name] = ""
			}
			for name, value := range c.serve.env {
				env[name] = value
				given[name] = true
			}
			base, stop = startServe(t, dir, env, c.serve.args...)
			continue
		}
		if base == "" {
			failures = append(failures, fmt.Sprintf("README.md:%d: a curl with no laurel serve before it", c.line))
			continue
		}
		if status, body := c.curl.do(t, base); status/100 != 2 {
			failures = append(failures, fmt.Sprintf("README.md:%d: %s %s answered %d: %s", c.line, c.curl.method, c.curl.path, status, body))
		}
	}
	stop()
	return failures
}

// runWalkthrough runs w against the server at base and returns its differences from the README.
func runWalkthrough(t *testing.T, base string, w walkthrough) []string {
	var failures []string
	answered := map[string]string{} // variables bound by answers
	for _, s := range w.steps {
		where := fmt.Sprintf("README.md:%d: %s %s", s.line, s.method, s.path)
		var unbound []string
		s.path, unbound = bindVars(s.path, answered, unbound)
		if s.body, unbound = bindVars(s.body, answered, unbound); len(unbound) > 0 {
			failures = append(failures, fmt.Sprintf("%s: $%s is neither assigned nor given by an earlier answer", where, unbound[0]))
			continue
		}
		status, body := s.do(t, base)
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
		if diff := matchJSON("", answerVars(s.want, got, answered), got); diff != "" {
			failures = append(failures, fmt.Sprintf("%s: %s\nREADME: %s\nserver: %s", where, diff, s.wantText, body))
		}
	}
	return failures
}

// do sends the step's request to the server at base and returns the answer's status and body;
// of a stream, its first event's data.
func (s step) do(t *testing.T, base string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, s.method, base+s.path, strings.NewReader(s.body))
	if err != nil {
		t.Fatal(err)
	}
	if s.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range s.header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if s.stream && resp.StatusCode == http.StatusOK {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				return resp.StatusCode, []byte(data)
			}
		}
		t.Fatalf("%s %s: the stream ended without an event (%v)", s.method, s.path, sc.Err())
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

type walkthrough struct {
	title string
	steps []step
	given map[string]bool // variables that an answer gives: "$NAME" in it, NAME not assigned
}

type step struct {
	line               int // of the curl in README.md
	method, path, body string
	header             http.Header
	stream             bool // -N: the answer is an event stream, read up to its first event
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
			for _, m := range answerRef.FindAllStringSubmatch(s.wantText, -1) {
				if w.given == nil {
					w.given = map[string]bool{}
				}
				w.given[m[1]] = true
			}
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
		for _, m := range unboundRef.FindAllStringSubmatch(s.path+s.body, -1) {
			if !w.given[m[1]] {
				return fmt.Errorf("line %d: $%s is not defined, nor given by an answer before", it.line, m[1])
			}
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

// curlStep reads `curl [-s] [-N] [-X METHOD] [-H 'NAME: VALUE'] URL [-d DATA]`.
func curlStep(it shellItem) (step, error) {
	s := step{line: it.line, status: http.StatusOK, header: http.Header{}}
	if it.words[0] != "curl" {
		return s, fmt.Errorf("line %d: %q: only curl and variable assignments can be run", it.line, it.words[0])
	}
	url := ""
	for a := it.words[1:]; len(a) > 0; a = a[1:] {
		switch {
		case a[0] == "-s" || a[0] == "--silent":
		case a[0] == "-N" || a[0] == "--no-buffer":
			s.stream = true
		case (a[0] == "-X" || a[0] == "-d" || a[0] == "--data" || a[0] == "-H" || a[0] == "--header") && len(a) > 1:
			switch a[0] {
			case "-X":
				s.method = a[1]
			case "-H", "--header":
				name, value, ok := strings.Cut(a[1], ":")
				if !ok {
					return s, fmt.Errorf("line %d: curl -H %q: not NAME: VALUE", it.line, a[1])
				}
				s.header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
			default:
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
// unboundVar marks in a command the place of a variable that an answer gives (lexShell).
const unboundVar = "\x00"

var (
	unboundRef = regexp.MustCompile("\x00([A-Za-z_][A-Za-z0-9_]*)\x00")
	answerRef  = regexp.MustCompile(`"\$([A-Za-z_][A-Za-z0-9_]*)"`)
)

// bindVars puts in s the variables answers gave, and appends to unbound those none gave yet.
func bindVars(s string, answered map[string]string, unbound []string) (string, []string) {
	return unboundRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := strings.Trim(ref, unboundVar)
		v, ok := answered[name]
		if !ok {
			unbound = append(unbound, name)
		}
		return v
	}), unbound
}

// answerVars returns want with each string "$NAME" of a variable no answer gave yet bound to
// what got holds in its place (a value answered in a variable's place is so taken), and those
// given already put in.
func answerVars(want, got any, answered map[string]string) any {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		out := make(map[string]any, len(w))
		for k, v := range w {
			out[k] = answerVars(v, g[k], answered)
		}
		return out
	case []any:
		g, _ := got.([]any)
		out := make([]any, len(w))
		for i, v := range w {
			var gv any
			if i < len(g) && !slices.Contains(w[:i+1], any(elided)) {
				gv = g[i]
			}
			out[i] = answerVars(v, gv, answered)
		}
		return out
	case string:
		name, ok := strings.CutPrefix(w, "$")
		if !ok || !assignment.MatchString(name+"=") {
			return w
		}
		if v, ok := answered[name]; ok {
			return v
		}
		if gs, ok := got.(string); ok {
			answered[name] = gs
			return gs
		}
	}
	return want
}

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
			v = unboundVar + name + unboundVar // an answer's, once the server gave it
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
	base, stop := startServe(t, t.TempDir(), nil)
	defer stop()
	failures := runWalkthrough(t, base, ws[0])
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
		"curl localhost:7300/x\n",                            // no answer
		"curl localhost:7300/x | jq .\n# → {}\n",             // a pipe
		"curl -u a:b localhost:7300/x\n# → {}\n",             // an option not understood
		"curl localhost:8080/x\n# → {}\n",                    // another server
		"curl localhost:7300/x\n# → {\"a\": \n",              // incomplete JSON
		"curl \"localhost:7300/x?at=$NOPE\"\n# → {}\n",       // an unknown variable
		"curl localhost:7300/x/$ID\n# → {\"id\": \"$ID\"}\n", // a variable given by its own answer only
		"X=$(date -d '1 week ago' +%F)\n",                    // a date not understood
		"rm -rf /tmp/x\n",                                    // not curl
		"# → {}\n",                                           // an answer to nothing
		"curl localhost:7300/x\n# → {}\n# → {}\n",            // two answers
		"curl -d '{\"a\": 1} localhost:7300/x\n# → {}\n",     // unterminated quote
	} {
		if _, err := parseWalkthroughs("## Walk-throughs\n### w\n```sh\n"+bad+"```\n", time.Now()); err == nil {
			t.Errorf("parsed %q without an error", bad)
		}
	}
}

// TestTopToBottomCatchesContradictions checks the follower of the README's top: a step that
// contradicts an earlier one fails, and only such steps; a later serve drops the variables of
// the one before and keeps its data; the scale-out store's serve is not run.
func TestTopToBottomCatchesContradictions(t *testing.T) {
	readme := strings.Join([]string{
		"# a README",
		"```sh",
		"go run ./cmd/laurel demo   # not run",
		"go run ./cmd/laurel serve",
		"```",
		"```sh",
		`curl -X PUT localhost:7300/v1/boards/b -d '{"windows": ["all", "week"]}'`,
		"```",
		"1. With a key:",
		"",
		"   ```sh",
		"   LAUREL_ADMIN_KEY=k laurel serve -cors-origins http://localhost:8080",
		"   ```",
		"```sh",
		`curl -X PUT -H 'Authorization: Bearer k' localhost:7300/v1/boards/b -d '{"windows": ["all"]}'`, // a window removed: 409
		`curl localhost:7300/v1/boards/b/entries`,                                                       // no key: 401
		`curl -s -N -H 'Authorization: Bearer k' 'localhost:7300/v1/boards/b/stream?limit=3'`,
		"LAUREL_ADMIN_KEY=… laurel serve -addr 10.0.0.5:7300 -postgres postgres://db/laurel -redis redis:6379",
		"go run ./cmd/laurel serve",
		`curl localhost:7300/v1/boards/b`, // open again, and b still there
		"```",
		"## Walk-throughs",
		"```sh",
		"curl localhost:7300/not/followed",
		"```",
	}, "\n")
	cmds, err := parseTopToBottom(readme)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range cmds {
		kind := "curl"
		if c.serve != nil {
			kind = fmt.Sprintf("serve %v%v", c.serve.env, c.serve.args)
		}
		kinds = append(kinds, fmt.Sprintf("%d:%s", c.line, kind))
	}
	if want := []string{"4:serve map[][]", "7:curl", "12:serve map[LAUREL_ADMIN_KEY:k][-cors-origins http://localhost:8080]",
		"15:curl", "16:curl", "17:curl", "19:serve map[][]", "20:curl"}; !slices.Equal(kinds, want) {
		t.Fatalf("parsed %v\nwant %v", kinds, want)
	}
	failures := followReadme(t, cmds)
	if len(failures) != 2 || !strings.HasPrefix(failures[0], "README.md:15: PUT /v1/boards/b answered 409") ||
		!strings.HasPrefix(failures[1], "README.md:16: GET /v1/boards/b/entries answered 401") {
		t.Fatalf("failures:\n%s\nwant the 409 of line 15 and the 401 of line 16", strings.Join(failures, "\n"))
	}

	for _, bad := range []string{
		"laurel serve -data /srv/laurel\n",       // where the next steps would not find it
		"laurel serve -addr=127.0.0.1:7301\n",    // nor this
		"curl -u a:b localhost:7300/v1/boards\n", // an option not understood
		"curl -H 'no colon' localhost:7300/x\n",  // a header that is none
	} {
		if _, err := parseTopToBottom("```sh\n" + bad + "```\n"); err == nil {
			t.Errorf("parsed %q without an error", bad)
		}
	}
}
