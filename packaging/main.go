// Command packaging builds laurel's Debian package from a binary already built, with nfpm as
// a library (the package's contents are in nfpm.yaml beside this file). It is a module of its
// own so that nfpm's dependencies stay out of laurel's.
//
//	go build -o laurel ./cmd/laurel
//	(cd packaging && go run . -binary ../laurel -version 1.2.3 -o ../laurel_1.2.3_amd64.deb)
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
)

func main() {
	binary := flag.String("binary", "", "the laurel binary to package")
	version := flag.String("version", "0.1.0", "the package's version")
	arch := flag.String("arch", runtime.GOARCH, "the package's architecture (Go's name)")
	out := flag.String("o", "", "the .deb to write")
	flag.Parse()
	if *binary == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: go run . -binary PATH -o FILE.deb [-version V] [-arch A]")
		os.Exit(2)
	}
	if err := build(*binary, *version, *arch, *out); err != nil {
		fmt.Fprintln(os.Stderr, "packaging:", err)
		os.Exit(1)
	}
}

func build(binary, version, arch, out string) error {
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	bin, err := filepath.Abs(binary)
	if err != nil {
		return err
	}
	vars := map[string]string{"BINARY": bin, "VERSION": version, "ARCH": arch}
	cfg, err := nfpm.ParseFileWithEnvMapping(filepath.Join(dir, "nfpm.yaml"), func(k string) string { return vars[k] })
	if err != nil {
		return err
	}
	info, err := cfg.Get("deb")
	if err != nil {
		return err
	}
	if err := nfpm.PrepareForPackager(nfpm.WithDefaults(info), "deb"); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := deb.Default.Package(info, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
