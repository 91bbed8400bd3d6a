// Command modproxy writes a file-based Go module proxy (GOPROXY=file://DIR)
// that serves every module of a git working tree at one version, zipped as
// the go command zips a module it fetches from the repository's tag. With it
// the repository's modules can be resolved, checked and installed before any
// tag is pushed: scripts/release, scripts/tidy and scripts/proxytest use it.
//
// Usage:
//
//	go run ./internal/modproxy -version v0.1.0 -out DIR [-repo DIR]
//
// The files of a module are those git lists in the working tree (tracked
// ones, with their changes, and untracked ones it does not ignore), minus
// what golang.org/x/mod/zip leaves out as the go command does: nested
// modules, vendored packages, symbolic links. A nested module without a
// LICENSE file gets the root's, as the go command gives it. On a clean tree
// the zips therefore hash as the ones the go command makes from a commit
// (modproxy_test.go compares them), and the go.sum lines printed for each
// module are the ones that the commit's tags will have.
//
// For each module, DIR gets @v/list (the version added to those already
// there), VERSION.info, VERSION.mod and VERSION.zip.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

func main() {
	version := flag.String("version", "", "the version every module is published at, such as v0.1.0")
	out := flag.String("out", "", "the proxy's directory, created if missing")
	repo := flag.String("repo", ".", "a directory of the git working tree")
	flag.Parse()
	if *version == "" || *out == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -version vX.Y.Z -out DIR [-repo DIR]")
		os.Exit(2)
	}
	sums, err := build(*repo, *version, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
	for _, s := range sums {
		fmt.Println(s)
	}
}

// A mod is one module of the working tree.
type mod struct {
	dir   string   // slash-separated, relative to the repository's root; "" for the root
	path  string   // its module path
	gomod []byte   // its go.mod
	files []string // slash-separated, relative to dir
}

// build writes every module of the working tree at repo into the proxy at
// out, at version, and returns their go.sum lines.
func build(repo, version, out string) ([]string, error) {
	top, err := git(repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	root := strings.TrimSpace(string(top))
	mods, err := modules(root)
	if err != nil {
		return nil, err
	}
	when := time.Now().UTC()
	if t, err := git(root, "log", "-1", "--format=%cI"); err == nil {
		if parsed, err := time.Parse(time.RFC3339, strings.TrimSpace(string(t))); err == nil {
			when = parsed.UTC()
		}
	}
	var sums []string
	for _, m := range mods {
		lines, err := write(root, m, version, when, out)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.path, err)
		}
		sums = append(sums, lines...)
	}
	return sums, nil
}

// modules lists the modules of the working tree at root with their files.
func modules(root string) ([]*mod, error) {
	listed, err := git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range strings.Split(string(listed), "\x00") {
		if f == "" || (len(files) > 0 && files[len(files)-1] == f) {
			continue // the end, or an unmerged file's next stage
		}
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		files = append(files, f)
	}
	var mods []*mod
	for _, f := range files {
		if path.Base(f) == ".gitattributes" {
			// git archive, which the go command zips a tag with, drops
			// export-ignore files and rewrites export-subst ones.
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
			if err != nil {
				return nil, err
			}
			if bytes.Contains(data, []byte("export-")) {
				return nil, fmt.Errorf("%s sets export-ignore or export-subst, which modproxy does not follow", f)
			}
		}
		if path.Base(f) != "go.mod" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		modPath := modfile.ModulePath(data)
		if modPath == "" {
			return nil, fmt.Errorf("%s names no module", f)
		}
		dir := path.Dir(f)
		if dir == "." {
			dir = ""
		}
		mods = append(mods, &mod{dir: dir, path: modPath, gomod: data})
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("no go.mod in the git working tree at %s", root)
	}
	for _, m := range mods {
		for _, f := range files {
			if m.dir == "" {
				m.files = append(m.files, f)
			} else if rel, ok := strings.CutPrefix(f, m.dir+"/"); ok {
				m.files = append(m.files, rel)
			}
		}
	}
	return mods, nil
}

// write adds module m at version to the proxy at out and returns its two
// go.sum lines.
func write(root string, m *mod, version string, when time.Time, out string) ([]string, error) {
	escPath, err := module.EscapePath(m.path)
	if err != nil {
		return nil, err
	}
	escVersion, err := module.EscapeVersion(version)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(out, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}

	modDir := filepath.Join(root, filepath.FromSlash(m.dir))
	var files []zip.File
	haveLICENSE := false
	for _, f := range m.files {
		files = append(files, diskFile{slash: f, name: filepath.Join(modDir, filepath.FromSlash(f))})
		haveLICENSE = haveLICENSE || f == "LICENSE"
	}
	if !haveLICENSE && m.dir != "" {
		// The go command gives a module in a subdirectory the repository's
		// LICENSE when it has none of its own (cmd/go's modfetch/coderepo.go).
		if _, err := os.Stat(filepath.Join(root, "LICENSE")); err == nil {
			files = append(files, diskFile{slash: "LICENSE", name: filepath.Join(root, "LICENSE")})
		}
	}
	zipName := filepath.Join(dir, escVersion+".zip")
	zf, err := os.Create(zipName)
	if err != nil {
		return nil, err
	}
	err = zip.Create(zf, module.Version{Path: m.path, Version: version}, files)
	if cerr := zf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}

	if err := os.WriteFile(filepath.Join(dir, escVersion+".mod"), m.gomod, 0o666); err != nil {
		return nil, err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, when})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, escVersion+".info"), info, 0o666); err != nil {
		return nil, err
	}
	if err := addToList(filepath.Join(dir, "list"), version); err != nil {
		return nil, err
	}

	zipSum, err := dirhash.HashZip(zipName, dirhash.Hash1)
	if err != nil {
		return nil, err
	}
	modSum, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(m.gomod)), nil
	})
	if err != nil {
		return nil, err
	}
	return []string{
		fmt.Sprintf("%s %s %s", m.path, version, zipSum),
		fmt.Sprintf("%s %s/go.mod %s", m.path, version, modSum),
	}, nil
}

// addToList adds version to the @v/list file name, once.
func addToList(name, version string) error {
	data, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(data))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	return os.WriteFile(name, []byte(strings.Join(versions, "\n")+"\n"), 0o666)
}

// A diskFile is a file of the working tree, as golang.org/x/mod/zip reads it.
type diskFile struct {
	slash string // the path in the module, slash-separated
	name  string // the path on disk
}

func (f diskFile) Path() string                 { return f.slash }
func (f diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.name) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.name) }

// git runs git in dir and returns its standard output.
func git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outp, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return outp, nil
}
