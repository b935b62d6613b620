# Sourced by crds.sh and charts.sh: assembles a folder of upstream files (CRDs or charts) as listed
# in sources.tsv, from ../shared when it holds them, else from the Go modules of the upstream
# releases. Callers set `prog` (their name, for messages) before sourcing.
#
# Why Go modules: the Go module proxy serves any tagged (or pseudo-versioned) commit of a public
# GitHub repository as a zip of the repository's files, and go.sum pins those bytes, so a clean
# clone needs nothing but Go and the proxy to get byte-identical copies of the upstream files.

up_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# ../shared: the development folder next to the project (absent on a plain clone).
up_shared="$(cd "$up_here/../.." && pwd)/../shared"
up_scratch=""
up_out=""
# On any exit, the scratch go.mod copy goes; so does a half-made output folder (up_assemble
# clears up_out once the folder is complete).
trap 'rm -rf "$up_scratch" ${up_out:+"$up_out"}' EXIT

up_die() { echo "$prog: error: $*" >&2; exit 1; }

# The sources.tsv lines of one type (crd or chart), comments left out.
up_rows() { awk -F'\t' -v t="$1" '!/^#/ && NF && $1 == t' "$up_here/sources.tsv"; }

# The version go.mod requires of module $1 (go.mod is the one place versions are written).
up_version() {
  (cd "$up_here" && go mod edit -json) | awk -v m="$1" '
    /"Path":/    { p = $2; gsub(/[",]/, "", p) }
    /"Version":/ { v = $2; gsub(/[",]/, "", v); if (p == m) { print v; exit } }'
}

# Downloads the modules named on the command line ("module commit" words, in pairs) and fills
# up_dir[module] with each one's folder in the module cache. Every failure is collected and
# reported at once, naming the module, the version and what went wrong. With UP_PARTIAL=1 (for
# check.sh) a module the proxy does not give is only a warning: the rest can still be compared.
declare -A up_dir=() up_tried=()
up_download() {
  command -v go >/dev/null 2>&1 || up_die "go is not installed (it downloads the upstream Go modules)"
  if [ -z "$up_scratch" ]; then
    # A scratch copy of go.mod/go.sum: `go mod download` would add any missing sum to go.sum,
    # and the checkout must never change; a sum it had to add means a module is not pinned.
    up_scratch="$(mktemp -d "${TMPDIR:-/tmp}/kaas-upstream-mod.XXXXXX")"
    cp "$up_here/go.mod" "$up_here/go.sum" "$up_scratch/"
  fi
  local errors=() unavailable=() module commit version json dir err origin
  while [ $# -gt 0 ]; do
    module="$1" commit="$2"
    shift 2
    [ -n "${up_tried[$module]:-}" ] && continue
    up_tried[$module]=1
    version="$(up_version "$module")"
    if [ -z "$version" ]; then
      errors+=("$module: no require line in tests/upstream/go.mod")
      continue
    fi
    # A pseudo-version names its commit: it must be the one sources.tsv names.
    if [[ "$version" =~ -[0-9]{14}-([0-9a-f]{12})$ ]] && [ "${commit:0:12}" != "${BASH_REMATCH[1]}" ]; then
      errors+=("$module@$version: go.mod's pseudo-version is not commit $commit (sources.tsv)")
      continue
    fi
    json="$(cd "$up_scratch" && go mod download -json "$module@$version" 2>&1)" || true
    # The first "Error" field, its escaped newlines and tabs turned into spaces.
    err="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' | head -n 1 | sed 's/\\[nt]/ /g')"
    dir="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
    origin="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]\{40\}\)",\{0,1\}$/\1/p')"
    if [ -n "$err" ] || [ -z "$dir" ] || [ ! -d "$dir" ]; then
      unavailable+=("$module@$version: go mod download failed: ${err:-$json}")
    elif [ -n "$origin" ] && [ "$origin" != "$commit" ]; then
      # The proxy says which commit it zipped: a tag moved or sources.tsv names another commit.
      errors+=("$module@$version: the proxy's zip is of commit $origin, sources.tsv names $commit")
    else
      up_dir[$module]="$dir"
    fi
  done
  if ! cmp -s "$up_here/go.sum" "$up_scratch/go.sum"; then
    errors+=("tests/upstream/go.sum does not pin every module downloaded; missing lines:
$(diff "$up_here/go.sum" "$up_scratch/go.sum" | sed -n 's/^> /  /p')")
  fi
  local e
  if [ "${UP_PARTIAL:-}" = 1 ]; then
    for e in "${unavailable[@]}"; do echo "$prog: warning: $e" >&2; done
  else
    errors+=("${unavailable[@]}")
  fi
  if [ ${#errors[@]} -gt 0 ]; then
    for e in "${errors[@]}"; do echo "$prog: error: $e" >&2; done
    up_die "could not assemble the upstream files from their Go modules (GOPROXY=$(go env GOPROXY))"
  fi
}

# up_assemble TYPE SHARED MODE: makes a folder under $TMPDIR holding every TYPE line of
# sources.tsv and prints its path. MODE `shared` copies SHARED (what it has) and takes only what it
# lacks from the modules; MODE `modules` takes everything from the modules.
up_assemble() {
  local type="$1" shared="$2" mode="$3" out
  local rows=() need=() row dest kind repo path tag commit module moddir skip
  mapfile -t rows < <(up_rows "$type")
  [ ${#rows[@]} -gt 0 ] || up_die "sources.tsv has no $type lines"
  out="$(mktemp -d "${TMPDIR:-/tmp}/kaas-$type.XXXXXX")"
  up_out="$out"
  for row in "${rows[@]}"; do
    IFS=$'\t' read -r _ dest kind repo path tag commit module moddir skip <<<"$row"
    if [ "$mode" = shared ] && [ -e "$shared/$dest" ]; then
      mkdir -p "$(dirname "$out/$dest")"
      cp -R "$shared/$dest" "$out/$dest"
    else
      need+=("$module" "$commit")
    fi
  done
  # ../shared/crds/SOURCES.md: its table names every file there (release_mirror.py reads it).
  if [ "$mode" = shared ] && [ -f "$shared/SOURCES.md" ]; then cp "$shared/SOURCES.md" "$out/SOURCES.md"; fi
  if [ ${#need[@]} -gt 0 ]; then
    up_download "${need[@]}"
    if [ "$type" = crd ] && [ ! -f "$out/SOURCES.md" ]; then
      # release_mirror.py reads this table (file, kind, repo, path, tag) to serve release assets.
      printf '%s\n' "# Upstream CRD sources" "" \
        "Assembled by tests/upstream/crds.sh from the Go modules of the upstream releases (tests/upstream/sources.tsv, pinned by tests/upstream/go.sum)." "" \
        "| File | Kind | Upstream repo | Upstream path | Tag | Commit |" "|---|---|---|---|---|---|" >"$out/SOURCES.md"
    fi
    for row in "${rows[@]}"; do
      IFS=$'\t' read -r _ dest kind repo path tag commit module moddir skip <<<"$row"
      [ -e "$out/$dest" ] && continue
      if [ -z "${up_dir[$module]:-}" ]; then
        # UP_PARTIAL=1 only: this module was not to be had; .missing lists what it would give.
        echo "$dest" >>"$out/.missing"
        continue
      fi
      local from="$path"
      if [ "$moddir" != . ]; then
        [ "${path#"$moddir"/}" != "$path" ] || up_die "sources.tsv: $path is not under the module folder $moddir"
        from="${path#"$moddir"/}"
      fi
      [ -e "${up_dir[$module]}/$from" ] || up_die "$module ($tag): no $from in the module (${up_dir[$module]})"
      mkdir -p "$(dirname "$out/$dest")"
      cp -R "${up_dir[$module]}/$from" "$out/$dest"
      if [ "$skip" != - ]; then
        local name
        IFS=, read -r -a names <<<"$skip"
        for name in "${names[@]}"; do rm -rf "${out:?}/$dest/$name"; done
      fi
      if [ "$type" = crd ]; then
        printf '| `%s` | %s | %s | `%s` | `%s` | `%s` |\n' "$dest" "$kind" "$repo" "$path" "$tag" "$commit" >>"$out/SOURCES.md"
      fi
    done
  fi
  # The module cache is read-only; the caller may delete or edit its copy.
  chmod -R u+w "$out"
  # source-watcher's ArtifactGenerator CRD (`delivery.mode: artifact`) has no YAML in any
  # module the proxy serves: it is generated from the served API module (see that script).
  if [ "$type" = crd ]; then
    "$up_here/artifactgenerator.sh" "$out" || up_die "could not generate the ArtifactGenerator CRD"
  fi
  up_out=""
  echo "$out"
}
