// Package docs_test checks that the repository's Markdown pages hold together: every relative
// link names a file that exists and, into a page, a heading that page has; and every section
// a page cites by name ("benchmarks.md, "Disk per event"") is a heading or a bold lead of the page
// it names. The pages are read from the working tree, so the test runs from this directory.
package docs_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// pages are the Markdown files checked, relative to the repository's root.
var pages = []string{"README.md", "clients/js/README.md", "clients/csharp/README.md", "docs/*.md"}

const root = ".."

func TestLinks(t *testing.T) {
	docs := load(t)
	checked := 0
	for _, name := range sortedNames(docs) {
		for _, l := range docs[name].links {
			checked++
			if err := resolve(docs, name, l.target); err != nil {
				t.Errorf("%s:%d: link %q: %v", name, l.line, l.target, err)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d links found in %v: the pages or the parser changed", checked, pages)
	}
}

func TestCitedSections(t *testing.T) {
	docs := load(t)
	checked := 0
	for _, name := range sortedNames(docs) {
		for _, c := range docs[name].citations {
			d, ok := citedPage(docs, name, c.page)
			if !ok {
				t.Errorf("%s:%d: cites %q of %s, a page not checked here", name, c.line, c.title, c.page)
				continue
			}
			checked++
			if !d.hasSection(c.title) {
				t.Errorf("%s:%d: cites %q of %s, which has no heading or bold lead that begins so", name, c.line, c.title, c.page)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d citations found: the pages or the parser changed", checked)
	}
}

// TestCodeCitesSections: a comment in the code that cites a page's section
// (docs/benchmarks.md, "Disk per event") names one the page has, so that a reader who follows it
// finds the figure or the decision it stands on.
func TestCodeCitesSections(t *testing.T) {
	docs := load(t)
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		name, _ := filepath.Rel(root, path)
		for _, c := range commentCitations(string(text)) {
			d, ok := citedPage(docs, filepath.ToSlash(name), c.page)
			if !ok {
				continue // a page outside the repository's docs, or a file not Markdown-checked
			}
			checked++
			if !d.hasSection(c.title) {
				t.Errorf("%s:%d: cites %q of %s, which has no heading or bold lead that begins so", name, c.line, c.title, c.page)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("only %d citations found in the code's comments: the code or the parser changed", checked)
	}
}

// commentCitations finds the citations in a Go file's line comments, which may wrap.
func commentCitations(text string) []citation {
	lines := strings.Split(text, "\n")
	comments := make([]string, len(lines))
	for i, l := range lines {
		if _, c, ok := strings.Cut(l, "// "); ok {
			comments[i] = c
		}
	}
	joined := strings.Join(comments, "\n")
	var out []citation
	for _, m := range cite.FindAllStringSubmatchIndex(joined, -1) {
		line := strings.Count(joined[:m[0]], "\n") + 1
		out = append(out, citation{line, joined[m[2]:m[3]], strings.Join(strings.Fields(joined[m[4]:m[5]]), " ")})
	}
	return out
}

// A page is what the checks need of one Markdown file.
type page struct {
	anchors   map[string]bool // GitHub's anchors of its headings
	sections  []string        // its headings' and bold leads' text, to match citations against
	links     []link
	citations []citation
}

type link struct {
	line   int
	target string
}

type citation struct {
	line        int
	page, title string
}

func (p *page) hasSection(title string) bool {
	title = plain(strings.TrimRight(title, "….,; "))
	for _, s := range p.sections {
		if strings.HasPrefix(s, title) {
			return true
		}
	}
	return false
}

func load(t *testing.T) map[string]*page {
	t.Helper()
	docs := make(map[string]*page)
	for _, pattern := range pages {
		names, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		if len(names) == 0 {
			t.Fatalf("no page matches %s", pattern)
		}
		for _, n := range names {
			text, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, n)
			docs[filepath.ToSlash(rel)] = parse(string(text))
		}
	}
	return docs
}

var (
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	inlineCode = regexp.MustCompile("`+[^`]*`+")
	mdLink     = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(\S+)`)
	bold       = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	// A citation names a page, then a quoted section: `benchmarks.md, "Disk per event"`, possibly
	// across a line break, the page possibly a link.
	cite   = regexp.MustCompile(`([A-Za-z0-9_/.-]+\.md)\]?(?:\([^)]*\))?\)?,\s+"([^"]+)"`)
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

func parse(text string) *page {
	p := &page{anchors: make(map[string]bool)}
	seen := make(map[string]int)
	var prose []string // the text outside code blocks, a line each, for citations
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			prose = append(prose, "")
			continue
		}
		if inFence {
			prose = append(prose, "")
			continue
		}
		prose = append(prose, line)
		if m := heading.FindStringSubmatch(line); m != nil {
			slug := slugOf(m[2])
			if n := seen[slug]; n > 0 {
				p.anchors[fmt.Sprintf("%s-%d", slug, n)] = true
			} else {
				p.anchors[slug] = true
			}
			seen[slug]++
			p.sections = append(p.sections, plain(m[2]))
		}
		code := inlineCode.ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(code, -1) {
			p.links = append(p.links, link{i + 1, m[1]})
		}
		if m := refDef.FindStringSubmatch(code); m != nil {
			p.links = append(p.links, link{i + 1, m[1]})
		}
	}
	// Bold leads and citations may wrap: look for them in the prose joined.
	joined := strings.Join(prose, "\n")
	for _, b := range bold.FindAllStringSubmatch(joined, -1) {
		p.sections = append(p.sections, plain(b[1]))
	}
	for _, m := range cite.FindAllStringSubmatchIndex(joined, -1) {
		line := strings.Count(joined[:m[0]], "\n") + 1
		p.citations = append(p.citations, citation{line, joined[m[2]:m[3]], strings.Join(strings.Fields(joined[m[4]:m[5]]), " ")})
	}
	return p
}

// resolve checks one link of page from against the pages and the files of the repository.
func resolve(docs map[string]*page, from, target string) error {
	if scheme.MatchString(target) {
		return nil // a URL: not checked here
	}
	path, anchor, _ := strings.Cut(target, "#")
	to := from
	if path != "" {
		to = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(from), path)))
		if strings.HasPrefix(to, "../") {
			return fmt.Errorf("points outside the repository")
		}
		if _, err := os.Stat(filepath.Join(root, to)); err != nil {
			return fmt.Errorf("no such file %s", to)
		}
	}
	if anchor == "" {
		return nil
	}
	d, ok := docs[to]
	if !ok {
		return fmt.Errorf("an anchor into %s, which is not a page checked here", to)
	}
	if !d.anchors[anchor] {
		return fmt.Errorf("%s has no heading whose anchor is #%s", to, anchor)
	}
	return nil
}

// slugOf is GitHub's anchor of a heading: its text as shown, lower-cased, with every character
// but letters, digits, spaces, hyphens and underscores dropped, and spaces made hyphens.
func slugOf(h string) string {
	h = mdLink.ReplaceAllString(h, "]") // [text](url) shows text
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// plain is a heading's or a citation's text as read: no code marks, emphasis or doubled spaces.
func plain(s string) string {
	s = strings.NewReplacer("`", "", "*", "").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// citedPage finds the page a citation in page from names: beside it, under docs/ (a page
// says "benchmarks.md" or "docs/benchmarks.md"), or from the root.
func citedPage(docs map[string]*page, from, cited string) (*page, bool) {
	for _, name := range []string{filepath.ToSlash(filepath.Join(filepath.Dir(from), cited)), "docs/" + cited, cited} {
		if d, ok := docs[name]; ok {
			return d, true
		}
	}
	return nil, false
}

func sortedNames(docs map[string]*page) []string {
	return slices.Sorted(maps.Keys(docs))
}
