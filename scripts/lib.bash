# Sourced by scripts/release, scripts/tidy, scripts/proxytest and
# scripts/apicheck: the repository's modules, the one version at which they
# require each other, and a module proxy built from the working tree. The
# caller sets root to the repository's top directory.

# own is the prefix of every module path of the repository.
own=github.com/ringflake/ringflake

# own_lines matches the go.sum lines of the repository's own modules.
own_lines="^$own[/ ]"

# modules prints each module's directory, as .ci/run and scripts/test list
# them: the directories of the go.mod files git knows.
modules() {
  git -C "$root" ls-files go.mod '*/go.mod' | xargs -n1 dirname | sort
}

# published MODULE_DIR succeeds for a module that is tagged and released:
# every one but those under internal/, which nothing outside the repository
# can import.
published() {
  case "$1" in internal/*) return 1 ;; esac
}

# module_path MODULE_DIR prints the module's path.
module_path() {
  go mod edit -print "$root/$1/go.mod" | sed -n 's/^module //p'
}

# own_requires MODULE_DIR prints "PATH VERSION" for each module of the
# repository that the module requires.
own_requires() {
  go mod edit -print "$root/$1/go.mod" | awk -v own="$own" '
    /^require \(/ { block = 1; next }
    block && /^\)/ { block = 0; next }
    block { line = $0 }
    /^require [^(]/ { line = substr($0, 9) }
    line != "" {
      split(line, f, " ")
      if (f[1] == own || index(f[1], own "/") == 1) print f[1], f[2]
      line = ""
    }'
}

# own_replaces MODULE_DIR prints the path of each module of the repository
# that the module's go.mod replaces.
own_replaces() {
  go mod edit -print "$root/$1/go.mod" | awk -v own="$own" '
    /^replace \(/ { block = 1; next }
    block && /^\)/ { block = 0; next }
    block { line = $0 }
    /^replace [^(]/ { line = substr($0, 9) }
    line != "" {
      split(line, f, " ")
      if (f[1] == own || index(f[1], own "/") == 1) print f[1]
      line = ""
    }'
}

# lockstep_version prints the one version at which the modules require each
# other, and fails if they disagree or if none requires another.
lockstep_version() {
  local m versions
  versions=$(for m in $(modules); do own_requires "$m"; done | awk '{ print $2 }' | sort -u)
  if [ -z "$versions" ]; then
    echo "no module requires another module of the repository" >&2
    return 1
  fi
  if [ "$(wc -l <<<"$versions")" != 1 ]; then
    echo "the modules require each other at different versions, where one is released in lockstep:" >&2
    for m in $(modules); do own_requires "$m" | sed "s|^|  $m requires |" >&2; done
    return 1
  fi
  echo "$versions"
}

# set_requires VERSION makes every module require the repository's other
# modules at VERSION and replace none of them.
set_requires() {
  local m p args
  for m in $(modules); do
    args=()
    for p in $(own_requires "$m" | awk '{ print $1 }'); do args+=("-require=$p@$1"); done
    for p in $(own_replaces "$m"); do args+=("-dropreplace=$p"); done
    [ ${#args[@]} -eq 0 ] || go mod edit "${args[@]}" "$root/$m/go.mod"
  done
}

# release_version prints the highest release version at which a module
# requires another of the repository's modules: the version to put them all
# at when a merge has brought another one, or a replace, back.
release_version() {
  local m
  for m in $(modules); do own_requires "$m"; done | awk '{ print $2 }' |
    grep -E '^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$' | grep -vx 'v0.0.0' | sort -V | tail -1
}

# build_proxy DIR VERSION writes into DIR a module proxy serving every module
# of the working tree at VERSION (internal/modproxy), and prints the go.sum
# lines of the zips it made. The tool is built once per calling script, in
# $tmp.
build_proxy() {
  if [ ! -x "$tmp/modproxy" ]; then
    GOWORK=off GOFLAGS=-buildvcs=false go -C "$root/internal/modproxy" build -o "$tmp/modproxy" .
  fi
  "$tmp/modproxy" -repo "$root" -version "$2" -out "$1"
}

# use_proxy DIR [MODCACHE] exports the environment of a module built on its
# own (GOWORK=off) whose requirements on the repository's modules resolve
# from the proxy at DIR. Other modules come from this machine's module
# caches if they are there (a cache's download directory is a proxy too),
# else from the usual proxy.
#
# The module cache is MODCACHE, or without it one kept for these checks
# between runs (so that each run neither downloads nor unpacks every
# dependency again), which this takes a lock on and clears of the
# repository's modules: a module cache keeps a module version forever,
# while the tree's zip at that version changes with every commit. So the
# go command's shared cache must never hold one. The repository's modules
# are not in the checksum database before a tag publishes them
# (GONOSUMDB). -trimpath keeps the module cache's directory out of the build
# cache's keys, so that a build in another module cache hits them.
use_proxy() {
  local shared upstream checks="${XDG_CACHE_HOME:-$HOME/.cache}/ringflake/modcache"
  shared=$(GOWORK=off go env GOMODCACHE)/cache/download
  upstream=$(GOWORK=off go env GOPROXY)
  GOPROXY="file://$1,file://$shared"
  if [ -n "${2:-}" ]; then
    GOMODCACHE=$2
    [ ! -d "$checks/cache/download" ] || GOPROXY="$GOPROXY,file://$checks/cache/download"
  else
    mkdir -p "$checks"
    exec 8>"$checks.lock"
    flock 8 # held until the calling script exits
    rm -rf "$checks/github.com/ringflake" "$checks/cache/download/github.com/ringflake"
    GOMODCACHE=$checks
  fi
  # The go command indexes a module in the module cache once per path and
  # version, in its build cache, taking it to be immutable; the tree's
  # modules at one version are not, so a run after a package was added to
  # one read the old index and missed it. goindex=0 turns the index off.
  export GODEBUG="${GODEBUG:+$GODEBUG,}goindex=0"
  export GOWORK=off GOMODCACHE GONOSUMDB="$own" GOPROXY="$GOPROXY,$upstream"
  export GOFLAGS="${GOFLAGS:-} -mod=mod -modcacherw -trimpath"
}

# work_replaces VERSION [FILE] points go.work's (or FILE's) replace directives at the working
# tree for every published module at VERSION: a module in the workspace takes
# the place of the module's versions only as a root of the build graph, so
# the graph still holds the versions the modules require of each other, and
# the go command would read their go.mod files from the proxy, where an
# unreleased version is missing (golang/go#66516). Replaces in go.work, not in
# the modules' go.mod files, keep local development in the workspace alone.
work_replaces() {
  local m args=() work=${2:-$root/go.work}
  for m in $(go work edit -print "$work" | awk -v own="$own" '
      /^replace \(/ { block = 1; next }
      block && /^\)/ { block = 0; next }
      block { line = $0 }
      /^replace [^(]/ { line = substr($0, 9) }
      line != "" {
        split(line, f, " ")
        if (f[1] == own || index(f[1], own "/") == 1) print f[1] (f[2] == "=>" ? "" : "@" f[2])
        line = ""
      }'); do
    args+=("-dropreplace=$m")
  done
  [ ${#args[@]} -eq 0 ] || go work edit "${args[@]}" "$work"
  {
    echo
    echo "// Each published module, at the version the modules require of each"
    echo "// other, is its directory here (scripts/lib.bash: work_replaces)."
    echo "replace ("
    for m in $(modules); do
      published "$m" && printf '\t%s %s => ./%s\n' "$(module_path "$m")" "$1" "${m#.}"
    done
    echo ")"
  } >>"$work"
  go work edit -fmt "$work"
}
