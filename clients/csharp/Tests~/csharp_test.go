// Package csharp_test runs the C# client's tests against a real laurel, so that `go test ./...`
// covers the client too: Mono's mcs compiles the library (../Runtime) and the test program
// beside this file, with the README's examples, and mono runs the program against a `laurel
// serve`. The folder's name ends in ~ so that Unity, importing the package above it, skips it.
package csharp_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel/laureltest"
)

const tokenSecret = "cs-test-secret-of-at-least-32-bytes!"

func TestClient(t *testing.T) {
	mcs, mono := tool(t, "mcs"), tool(t, "mono")
	dir := t.TempDir()
	lib := filepath.Join(dir, "Laurel.dll")
	sources, err := filepath.Glob("../Runtime/*.cs")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no sources in ../Runtime: %v", err)
	}
	// As Laurel.csproj builds it: with its documentation, not every member documented.
	compile(t, mcs, append([]string{"-target:library", "-out:" + lib, "-doc:" + filepath.Join(dir, "Laurel.xml"), "-nowarn:1573,1591"}, sources...)...)
	examples := filepath.Join(dir, "Examples.cs")
	if err := os.WriteFile(examples, []byte(readmeExamples(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "LaurelTests.exe")
	compile(t, mcs, "-out:"+exe, "-r:"+lib, "Tests.cs", "UnityStubs.cs", examples)

	base := laureltest.ServeCommand(t, "LAUREL_ADMIN_KEY=cs-admin", "LAUREL_TOKEN_SECRETS=cs="+tokenSecret)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, mono, "--debug", exe)
	run.Env = append(os.Environ(), "LAUREL_URL="+base, "LAUREL_ADMIN_KEY=cs-admin", "LAUREL_TOKEN_KID=cs", "LAUREL_TOKEN_SECRET="+tokenSecret)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("mono LaurelTests.exe: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// tool is the path of a Mono command; without it the test is skipped, and under CI=true fails.
func tool(t *testing.T, name string) string {
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed: CI must install Mono (see .ci/run)", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return path
}

// compile runs mcs with the assemblies the client uses, every warning an error, and symbols
// for the stack traces of failures.
func compile(t *testing.T, mcs string, args ...string) {
	t.Helper()
	args = append([]string{"-debug", "-warnaserror+", "-r:System.Net.Http.dll"}, args...)
	if out, err := exec.Command(mcs, args...).CombinedOutput(); err != nil {
		t.Fatalf("mcs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

var csharpBlock = regexp.MustCompile("(?s)```csharp\n(.*?)```")

// readmeExamples is the C# of the README's examples, so that they cannot rot: each block that
// defines a class as it is (Tests.cs runs the Unity example), and each other block as the
// body of an async method, given the names it leaves to the reader.
func readmeExamples(t *testing.T) string {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var usings, code []string
	classes := 0
	for i, m := range csharpBlock.FindAllStringSubmatch(string(readme), -1) {
		var body []string
		for _, line := range strings.Split(m[1], "\n") {
			if strings.HasPrefix(line, "using ") {
				usings = append(usings, line)
			} else {
				body = append(body, line)
			}
		}
		if strings.Contains(m[1], "\npublic class ") {
			classes++
			code = append(code, body...)
			continue
		}
		// A snippet's results are for the reader to use: CS0219 says they are unused.
		code = append(code, "#pragma warning disable 219", "static class Snippet"+string(rune('A'+i))+" {",
			"static async System.Threading.Tasks.Task Run(string adminKey, System.Threading.CancellationTokenSource stop, System.Action<System.Collections.Generic.IReadOnlyList<Laurel.Entry>> Render) {")
		code = append(code, body...)
		code = append(code, "}", "}", "#pragma warning restore 219")
	}
	if classes == 0 {
		t.Fatal("README.md: no C# block defines a class: where is the Unity example?")
	}
	return strings.Join(append(append(dedupe(append([]string{"using System;"}, usings...)), code...), ""), "\n")
}

func dedupe(lines []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lines {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

var metaGUID = regexp.MustCompile(`(?m)^guid: ([0-9a-f]{32})$`)

// TestUnityPackage checks what Unity's package manager needs of clients/csharp: a .meta with a
// GUID of its own for every file and folder it imports (from a git URL the package is read-only,
// and Unity ignores an asset without one), none for what it skips, and the package's version
// the same as the NuGet package's.
func TestUnityPackage(t *testing.T) {
	guids := map[string]string{}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || path == ".." {
			return err
		}
		name := d.Name()
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if asset, ok := strings.CutSuffix(path, ".meta"); ok {
			if _, err := os.Stat(asset); err != nil {
				t.Errorf("%s: no %s beside it", path, asset)
			}
			return nil
		}
		meta, err := os.ReadFile(path + ".meta")
		if err != nil {
			t.Errorf("%s: no .meta: Unity would ignore it", path)
			return nil
		}
		m := metaGUID.FindSubmatch(meta)
		if m == nil {
			t.Errorf("%s.meta: no guid", path)
			return nil
		}
		if other, dup := guids[string(m[1])]; dup {
			t.Errorf("%s.meta: the guid of %s.meta", path, other)
		}
		guids[string(m[1])] = path
		if d.IsDir() != strings.Contains(string(meta), "\nfolderAsset: yes\n") {
			t.Errorf("%s.meta: folderAsset does not say whether it is a folder", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(guids) < 10 {
		t.Fatalf("only %d assets", len(guids))
	}

	var pkg struct{ Name, Version, Unity string }
	readJSON(t, "../package.json", &pkg)
	if !regexp.MustCompile(`^com\.[a-z0-9-]+\.[a-z0-9.-]+$`).MatchString(pkg.Name) || pkg.Unity == "" {
		t.Errorf("package.json: name %q, unity %q", pkg.Name, pkg.Unity)
	}
	var asmdef struct {
		Name               string
		NoEngineReferences bool
	}
	readJSON(t, "../Runtime/Laurel.asmdef", &asmdef)
	if asmdef.Name != "Laurel" || !asmdef.NoEngineReferences {
		t.Errorf("Laurel.asmdef: %+v", asmdef)
	}
	var nuspec struct {
		Version string `xml:"metadata>version"`
	}
	b, err := os.ReadFile("../Laurel.nuspec")
	if err == nil {
		err = xml.Unmarshal(b, &nuspec)
	}
	if err != nil || nuspec.Version != pkg.Version {
		t.Errorf("Laurel.nuspec: version %q (%v), package.json's %q", nuspec.Version, err, pkg.Version)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
