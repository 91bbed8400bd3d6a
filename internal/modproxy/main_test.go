package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test repository's module path: the go command finds a github.com
// repository's URL without asking the network, and git's insteadOf then
// sends it to the local repository.
const testModule = "github.com/modproxy-test/proj"

// TestZipsHashAsTheGoCommandMakesThemFromATag builds a repository with
// nested modules, a LICENSE at the root only, an ignored file and a symbolic
// link, tags it, and compares modproxy's go.sum lines with the ones the go
// command computes when it downloads each module straight from the tag
// (GOPROXY=direct), as the public proxy does.
func TestZipsHashAsTheGoCommandMakesThemFromATag(t *testing.T) {
	repo := t.TempDir()
	writeFiles(t, repo, map[string]string{
		"go.mod":              "module " + testModule + "\n\ngo 1.25.0\n",
		"proj.go":             "package proj\n",
		"inner/inner.go":      "package inner\n",
		"LICENSE":             "a licence for every module\n",
		".gitignore":          "ignored.txt\n",
		"ignored.txt":         "not in any zip\n",
		"sub/go.mod":          "module " + testModule + "/sub\n\ngo 1.25.0\n",
		"sub/sub.go":          "package sub\n",
		"sub/deep/deep.go":    "package deep\n",
		"sub/nested/go.mod":   "module " + testModule + "/sub/nested\n\ngo 1.25.0\n",
		"sub/nested/n.go":     "package nested\n",
		"sub/nested/LICENSE":  "its own licence\n",
		"testdata/input.txt":  "data\n",
		"sub/testdata/in.txt": "data\n",
	})
	require.NoError(t, os.Symlink("proj.go", filepath.Join(repo, "link.go")))
	run(t, repo, nil, "git", "init", "-q")
	run(t, repo, nil, "git", "add", "-A")
	run(t, repo, nil, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first")
	for _, tag := range []string{"v0.1.0", "sub/v0.1.0", "sub/nested/v0.1.0"} {
		run(t, repo, nil, "git", "tag", tag)
	}

	out := t.TempDir()
	sums, err := build(repo, "v0.1.0", out)
	require.NoError(t, err, "build the proxy")

	// What each zip holds, read back.
	assert.ElementsMatch(t, []string{".gitignore", "LICENSE", "go.mod", "inner/inner.go", "proj.go", "testdata/input.txt"},
		zipFiles(t, filepath.Join(out, testModule, "@v", "v0.1.0.zip"), testModule+"@v0.1.0/"),
		"the root module's zip: neither nested module, the ignored file nor the symbolic link")
	assert.ElementsMatch(t, []string{"LICENSE", "go.mod", "sub.go", "deep/deep.go", "testdata/in.txt"},
		zipFiles(t, filepath.Join(out, testModule, "sub", "@v", "v0.1.0.zip"), testModule+"/sub@v0.1.0/"),
		"sub's zip: the root's LICENSE, not the nested module")
	for _, m := range []string{testModule, testModule + "/sub", testModule + "/sub/nested"} {
		list, err := os.ReadFile(filepath.Join(out, m, "@v", "list"))
		require.NoError(t, err)
		assert.Equal(t, "v0.1.0\n", string(list), "%s's @v/list", m)
	}

	// The go command's own zips, from the tag.
	gitConfig := filepath.Join(t.TempDir(), "gitconfig")
	writeFiles(t, filepath.Dir(gitConfig), map[string]string{
		"gitconfig": "[url \"" + repo + "\"]\n\tinsteadOf = https://" + testModule + "\n" +
			"[protocol \"file\"]\n\tallow = always\n",
	})
	gopath := t.TempDir()
	env := append(os.Environ(),
		"GIT_CONFIG_GLOBAL="+gitConfig, "GIT_CONFIG_NOSYSTEM=1",
		"GOPROXY=direct", "GOSUMDB=off", "GOFLAGS=-modcacherw", "GOWORK=off", "GOTOOLCHAIN=local",
		"GOPATH="+gopath, "GOMODCACHE="+filepath.Join(gopath, "mod"))
	downloaded := run(t, t.TempDir(), env, "go", "mod", "download", "-json",
		testModule+"@v0.1.0", testModule+"/sub@v0.1.0", testModule+"/sub/nested@v0.1.0")
	var want []string
	dec := json.NewDecoder(strings.NewReader(downloaded))
	for dec.More() {
		var m struct{ Path, Version, Sum, GoModSum, Error string }
		require.NoError(t, dec.Decode(&m))
		require.Empty(t, m.Error, "go mod download %s", m.Path)
		want = append(want, m.Path+" "+m.Version+" "+m.Sum, m.Path+" "+m.Version+"/go.mod "+m.GoModSum)
	}
	assert.ElementsMatch(t, want, sums, "modproxy's go.sum lines against the go command's, from the tag")
}

// TestWorkingTreeChangesAreServed checks that the proxy serves the working
// tree as it is: an uncommitted change, a new file git does not ignore, and
// no deleted file.
func TestWorkingTreeChangesAreServed(t *testing.T) {
	repo := t.TempDir()
	writeFiles(t, repo, map[string]string{
		"go.mod":  "module " + testModule + "\n\ngo 1.25.0\n",
		"a.go":    "package proj\n",
		"gone.go": "package proj\n",
	})
	run(t, repo, nil, "git", "init", "-q")
	run(t, repo, nil, "git", "add", "-A")
	run(t, repo, nil, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first")
	writeFiles(t, repo, map[string]string{"a.go": "package proj // changed\n", "new.go": "package proj\n"})
	require.NoError(t, os.Remove(filepath.Join(repo, "gone.go")))

	out := t.TempDir()
	_, err := build(repo, "v0.2.0", out)
	require.NoError(t, err)
	name := filepath.Join(out, testModule, "@v", "v0.2.0.zip")
	assert.ElementsMatch(t, []string{"go.mod", "a.go", "new.go"}, zipFiles(t, name, testModule+"@v0.2.0/"))
	z, err := zip.OpenReader(name)
	require.NoError(t, err)
	defer z.Close()
	for _, f := range z.File {
		if strings.HasSuffix(f.Name, "/a.go") {
			r, err := f.Open()
			require.NoError(t, err)
			data := make([]byte, 100)
			n, _ := r.Read(data)
			r.Close()
			assert.Equal(t, "package proj // changed\n", string(data[:n]), "a.go as changed in the working tree")
		}
	}
}

func TestRefusesExportAttributes(t *testing.T) {
	repo := t.TempDir()
	writeFiles(t, repo, map[string]string{
		"go.mod":         "module " + testModule + "\n\ngo 1.25.0\n",
		".gitattributes": "docs export-ignore\n",
	})
	run(t, repo, nil, "git", "init", "-q")
	_, err := build(repo, "v0.1.0", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), ".gitattributes sets export-ignore or export-subst")
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o777))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o666))
	}
}

// run runs a command in dir with env (nil: this process's) and returns its
// standard output, failing the test if it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, ee.Stderr)
	}
	require.NoError(t, err, "%s %s", name, strings.Join(args, " "))
	return string(out)
}

// zipFiles lists the files of a module zip, without their prefix.
func zipFiles(t *testing.T, name, prefix string) []string {
	t.Helper()
	z, err := zip.OpenReader(name)
	require.NoError(t, err)
	defer z.Close()
	var files []string
	for _, f := range z.File {
		rel, ok := strings.CutPrefix(f.Name, prefix)
		require.True(t, ok, "%s lies outside %s", f.Name, prefix)
		files = append(files, rel)
	}
	return files
}
