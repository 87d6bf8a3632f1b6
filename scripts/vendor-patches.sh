#!/usr/bin/env bash
# Keeps the patched third-party crates in vendor/ honest: each vendor/<crate>
# must be exactly its crates.io release plus vendor/patches/<crate>-<version>.patch
# (vendor/README.md says what each patch changes and why).
#
#   scripts/vendor-patches.sh [check]   fetch each pristine release through
#                                       cargo, apply its patch, and compare the
#                                       result with vendor/<crate>; fails on
#                                       any difference
#   scripts/vendor-patches.sh update    rewrite the patches from vendor/ as it
#                                       is now (after changing a vendored crate
#                                       or moving it to a new release)
#
# The crate and version come from vendor/<crate>/Cargo.toml. The release is
# downloaded by `cargo fetch` in a throwaway project (into cargo's own
# registry cache, checksum-verified) and unpacked from the .crate file.
# Files the registry adds on packaging are not part of vendor/: the
# published Cargo.lock and .cargo_vcs_info.json (and .cargo-ok, which
# cargo writes on unpacking) are removed from the pristine tree first;
# Cargo.toml.orig, the manifest as the authors wrote it, is kept. A
# target/ folder (a build's output, ignored by git) is not compared.
# Needs bash, cargo, tar, diff and patch; leaves nothing behind in $TMPDIR.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
vendor=$root/vendor
patches=$vendor/patches
self=scripts/vendor-patches.sh

mode=${1:-check}
case $mode in
  check | update) ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "$self: unknown mode '$mode' (check or update)" >&2
    exit 2
    ;;
esac

for tool in cargo rustc tar diff patch; do
  if ! command -v "$tool" >/dev/null; then
    hint=
    [ "$tool" = patch ] && hint=" (apt-get install patch)"
    echo "$self: needs $tool on PATH$hint" >&2
    exit 2
  fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vendor-patches.XXXXXX")
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
# So that the EXIT trap also runs on Ctrl-C and kill.
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Stable file order and the epoch of a missing file in UTC, whatever the
# caller's locale and time zone.
export LC_ALL=C TZ=UTC

# manifest_field FILE KEY: KEY's value in the [package] table of FILE.
manifest_field() {
  awk -v key="$2" '
    /^\[/ { in_package = ($0 == "[package]") }
    in_package && $1 == key && $2 == "=" {
      value = $3; gsub(/"/, "", value); print value; exit
    }' "$1"
}

# The vendored crates: folder, crate name and version, one per line.
crates=()
for manifest in "$vendor"/*/Cargo.toml; do
  dir=$(basename "$(dirname "$manifest")")
  name=$(manifest_field "$manifest" name)
  version=$(manifest_field "$manifest" version)
  if [ -z "$name" ] || [ -z "$version" ]; then
    echo "$self: no [package] name and version in vendor/$dir/Cargo.toml" >&2
    exit 2
  fi
  crates+=("$dir $name $version")
done
if [ ${#crates[@]} -eq 0 ]; then
  echo "$self: no crates in vendor/" >&2
  exit 2
fi

# Download every release at once: a throwaway project that depends on each
# at its exact version, outside the workspace (no [patch] applies there).
fetch=$tmp/fetch
mkdir -p "$fetch/src"
: >"$fetch/src/lib.rs"
{
  printf '[package]\nname = "vendor-patches-fetch"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[workspace]\n\n[dependencies]\n'
  for entry in "${crates[@]}"; do
    read -r dir name version <<<"$entry"
    printf '%s = { version = "=%s", default-features = false }\n' "$name" "$version"
  done
} >"$fetch/Cargo.toml"
host=$(rustc -vV | sed -n 's/^host: //p')
echo "fetching from crates.io through cargo: $(printf '%s, ' "${crates[@]#* }" | sed 's/, $//')" >&2
(cd "$fetch" && cargo fetch --quiet ${host:+--target "$host"}) || {
  echo "$self: cargo fetch failed (is crates.io reachable through cargo?)" >&2
  exit 2
}
cargo_home=${CARGO_HOME:-$HOME/.cargo}

# pristine NAME VERSION: unpacks the release into $tmp/pristine/NAME-VERSION,
# without the files the registry adds, and prints that path.
pristine() {
  local name=$1 version=$2 crate
  crate=$(ls -t "$cargo_home"/registry/cache/*/"$name-$version.crate" 2>/dev/null | head -n 1)
  if [ -z "$crate" ]; then
    echo "$self: cargo fetched $name $version but no $name-$version.crate is in $cargo_home/registry/cache" >&2
    exit 2
  fi
  mkdir -p "$tmp/pristine"
  tar -xzf "$crate" -C "$tmp/pristine"
  local tree=$tmp/pristine/$name-$version
  rm -f "$tree/.cargo_vcs_info.json" "$tree/.cargo-ok" "$tree/Cargo.lock"
  echo "$tree"
}

# What is not compared: a build's output.
excludes=(--exclude=target)

status=0
for entry in "${crates[@]}"; do
  read -r dir name version <<<"$entry"
  patch_file=$patches/$name-$version.patch
  rel_patch=vendor/patches/$name-$version.patch
  tree=$(pristine "$name" "$version")

  if [ "$mode" = update ]; then
    # a/ and b/ so that the patch applies with -p1 inside the crate.
    work=$tmp/diff-$dir
    mkdir -p "$work"
    ln -s "$tree" "$work/a"
    ln -s "$vendor/$dir" "$work/b"
    rc=0
    (cd "$work" && diff -ruN "${excludes[@]}" a b) >"$work/raw" || rc=$?
    if [ "$rc" -gt 1 ]; then
      echo "$self: diff failed for vendor/$dir" >&2
      exit 2
    fi
    mkdir -p "$patches"
    # Stale patches of other releases of this crate go.
    for old in "$patches/$name"-[0-9]*.patch; do
      if [ -e "$old" ] && [ "$old" != "$patch_file" ]; then
        rm "$old"
        echo "vendor/$dir: removed vendor/patches/$(basename "$old")"
      fi
    done
    if [ "$rc" -eq 0 ]; then
      rm -f "$patch_file"
      echo "vendor/$dir: no changes against $name $version, no patch"
      continue
    fi
    # No timestamps (they would change with every checkout); a file one side
    # lacks (diff -N gives it the epoch) is /dev/null, as in git's patches.
    sed -E \
      -e 's#^--- a/[^\t]*\t1970-01-01 00:00:00(\.0+)? \+0000$#--- /dev/null#' \
      -e 's#^\+\+\+ b/[^\t]*\t1970-01-01 00:00:00(\.0+)? \+0000$#+++ /dev/null#' \
      -e 's#^((---|\+\+\+) [ab]/[^\t]*)\t.*$#\1#' \
      -e "s#^diff -ruN ('[^']*' )*a/#diff -ruN a/#" \
      "$work/raw" >"$patch_file"
    files=$(grep -c '^diff -ruN' "$patch_file" || true)
    echo "vendor/$dir: wrote $rel_patch ($files files)"
    continue
  fi

  # check: pristine + patch must be vendor/<crate>, byte for byte.
  expected=$tmp/expected-$dir
  cp -a "$tree" "$expected"
  if [ -f "$patch_file" ]; then
    if ! patch -p1 -s -F0 --no-backup-if-mismatch -r - -d "$expected" -i "$patch_file" >"$tmp/patch.log" 2>&1; then
      cat "$tmp/patch.log" >&2
      echo "$self: $rel_patch does not apply to $name $version from crates.io." >&2
      echo "  If vendor/$dir is right, run $self update and commit the patch." >&2
      status=1
      continue
    fi
  fi
  if ! diff -ru "${excludes[@]}" "$expected" "$vendor/$dir" >"$tmp/check.diff"; then
    sed -e "s#$expected#$name-$version+patch#g" -e "s#$vendor/#vendor/#g" "$tmp/check.diff" >&2
    echo "$self: vendor/$dir is not $name $version from crates.io plus ${rel_patch} (differences above)." >&2
    echo "  If you changed vendor/$dir on purpose, run $self update, review the patch and" >&2
    echo "  commit it with vendor/README.md; otherwise restore vendor/$dir from git." >&2
    status=1
    continue
  fi
  echo "vendor/$dir: $name $version + $rel_patch, identical"
done

if [ "$mode" = check ]; then
  # A patch whose crate is no longer vendored at that version.
  for patch_file in "$patches"/*.patch; do
    [ -e "$patch_file" ] || continue
    known=0
    for entry in "${crates[@]}"; do
      read -r dir name version <<<"$entry"
      if [ "$(basename "$patch_file")" = "$name-$version.patch" ]; then known=1; fi
    done
    if [ "$known" -eq 0 ]; then
      echo "$self: vendor/patches/$(basename "$patch_file") belongs to no crate in vendor/ (run $self update to remove it)" >&2
      status=1
    fi
  done
fi
exit "$status"
