#!/usr/bin/env bash
# Debian 13 ("trixie")'s nginx 1.26 (built --with-http_v3_module) and
# HAProxy 3.0 (built USE_QUIC=1, on the OpenSSL compat layer) on this
# Debian 12 machine, without touching the system: apt runs with a private
# configuration, sources.list, lists and cache under DIR; `apt-get
# download` fetches each server and the libraries it links from the trixie
# suite of the mirror this machine already uses; `dpkg-deb -x` unpacks them
# all into DIR/root; and DIR/bin/nginx, DIR/bin/haproxy run the server
# through Debian 13's own dynamic loader, with DIR/root's libraries only.
# Nothing is installed with dpkg; the system's apt state is not read or
# written.
#
# Usage: scripts/trixie-servers.sh [nginx|haproxy|all]     (default all)
#   DIR is H3LAB_TRIXIE_DIR, /opt/h3lab-ci/trixie by default;
#   H3LAB_TRIXIE_MIRROR overrides the mirror (default: the Debian mirror of
#   /etc/apt/sources.list(.d), else http://deb.debian.org/debian);
#   H3LAB_TRIXIE_REFRESH=1 fetches the suite's current packages again.
# Idempotent: a server already unpacked, whose wrapper runs, is kept as is.
# Ends by printing the versions (nginx -V, haproxy -vv's first lines).
#
# DIR/etc is DIR/root/etc, so a configuration can `include
# DIR/etc/nginx/mime.types` (Debian 13's, from nginx-common). This nginx
# logs errors to stderr until its configuration says otherwise, but its
# compiled-in temp paths are /var/lib/nginx/*: a configuration sets its
# own (scripts/peer-server.sh and scripts/edge-server.sh do).
# h3lab is not needed here.
set -euo pipefail

die() { echo "trixie-servers: $*" >&2; exit 1; }
what=${1:-all}
case $what in
  nginx) servers=(nginx) ;;
  haproxy) servers=(haproxy) ;;
  all) servers=(nginx haproxy) ;;
  *) die "usage: $0 [nginx|haproxy|all]" ;;
esac
[[ $# -le 1 ]] || die "usage: $0 [nginx|haproxy|all]"

dir=${H3LAB_TRIXIE_DIR:-/opt/h3lab-ci/trixie}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
root=$dir/root
libdir=$root/usr/lib/x86_64-linux-gnu
loader=$libdir/ld-linux-x86-64.so.2
[[ $(dpkg --print-architecture 2>/dev/null || uname -m) =~ ^(amd64|x86_64)$ ]] ||
  die "only amd64 is set up here (the loader and library paths are x86_64-linux-gnu)"

# The packages each server needs: the server and the libraries its binary
# links, with theirs (the check below fails naming any library not
# found in DIR/root). nginx-common brings /etc/nginx/mime.types.
# libssl3t64 (OpenSSL 3.5) links libzstd; liblua5.4 and the OpenTracing
# wrapper link libstdc++.
packages_nginx=(nginx nginx-common libc6 libcrypt1 libpcre2-8-0 libssl3t64 zlib1g libzstd1)
packages_haproxy=(haproxy libc6 libcrypt1 libjemalloc2 liblua5.4-0 libopentracing-c-wrapper0t64
  libopentracing1 libpcre2-8-0 libssl3t64 zlib1g libzstd1 libstdc++6 libgcc-s1)
binary_nginx=usr/sbin/nginx
binary_haproxy=usr/sbin/haproxy

exec 9>"$dir/.lock"
flock 9

# Whether SERVER is unpacked and its wrapper runs.
ready() {
  local server=$1
  [[ -f $dir/.$server.stamp && -x $dir/bin/$server ]] || return 1
  case $server in
    nginx) "$dir/bin/nginx" -v >/dev/null 2>&1 ;;
    haproxy) "$dir/bin/haproxy" -v >/dev/null 2>&1 ;;
  esac
}

# The Debian mirror this machine uses: the first URI of a debian (not
# debian-security) archive in its sources, one-line or deb822.
mirror() {
  local uri
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    sed -n -E -e 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' \
      -e 's/^[[:space:]]*URIs:[[:space:]]*//p' | tr ' ' '\n' |
    grep -E '^https?://[^[:space:]]+/debian/?$' | head -n 1 || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

apt_private() {
  local apt=$dir/apt
  mkdir -p "$apt/etc/apt.conf.d" "$apt/etc/preferences.d" "$apt/lists/partial" \
    "$apt/cache/archives/partial" "$apt/state" "$dir/debs"
  : >"$apt/state/status"
  # Debian 12's keyring (debian-archive-keyring 2023.3+deb12u2 and later)
  # holds trixie's archive keys: the suite's signature is checked.
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [[ -r $keyring ]] || die "no $keyring: apt-get install debian-archive-keyring"
  echo "deb [signed-by=$keyring] ${H3LAB_TRIXIE_MIRROR:-$(mirror)} trixie main" >"$apt/etc/sources.list"
  # Read before the system's configuration, which it turns off: no
  # /etc/apt/apt.conf.d (its update hooks, its appstream indexes), no
  # system sources, lists, cache or dpkg status.
  cat >"$apt/apt.conf" <<APT
Dir::Etc::Parts "$apt/etc/apt.conf.d";
Dir::Etc::Main "/dev/null";
Dir::Etc::SourceList "$apt/etc/sources.list";
Dir::Etc::SourceParts "/dev/null";
Dir::Etc::Preferences "$apt/etc/preferences";
Dir::Etc::PreferencesParts "$apt/etc/preferences.d";
Dir::State "$apt/state";
Dir::State::Lists "$apt/lists";
Dir::State::status "$apt/state/status";
Dir::Cache "$apt/cache";
// No binary caches (80 MB); the lists kept compressed (10 MB, not 55).
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::GzipIndexes "true";
Dir::Log "$apt/log";
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
Acquire::Languages "none";
// A machine whose clock is behind the suite's Release date still fetches.
Acquire::Check-Date "false";
APT
  export APT_CONFIG=$apt/apt.conf
  # apt downloads as _apt where it can.
  if [[ $(id -u) -eq 0 ]] && id _apt >/dev/null 2>&1; then
    chown _apt "$dir/debs" "$apt/cache/archives/partial"
  fi
}

fetch() {
  local server=$1 list pkg file
  list=packages_$server[@]
  cd "$dir/debs"
  for pkg in "${!list}"; do
    # apt-get download's name for it: PACKAGE_VERSION_ARCH.deb, the
    # version's epoch colon written %3a.
    file=$(apt-cache show --no-all-versions "$pkg" 2>/dev/null |
      awk '/^Version: /{v=$2} /^Architecture: /{a=$2} END{if(v!=""){gsub(":","%3a",v); print "'"$pkg"'_" v "_" a ".deb"}}')
    [[ -n $file ]] || die "trixie has no package $pkg"
    if [[ ! -s $file ]]; then
      echo "trixie-servers: fetching $pkg ($file)" >&2
      apt-get download -q "$pkg" >/dev/null || die "apt-get download $pkg failed"
    fi
    [[ -s $file ]] || die "apt-get download $pkg did not leave $file"
    dpkg-deb -x "$file" "$root"
    echo "$file"
  done >"$dir/.$server.debs"
  cd - >/dev/null
}

# Every library SERVER's binary needs must come from DIR/root, none from
# Debian 12.
check_libs() {
  local server=$1 bin list outside
  bin=binary_$server
  [[ -x $loader ]] || die "no loader at $loader after unpacking libc6"
  list=$("$loader" --inhibit-cache --library-path "$libdir" --list "$root/${!bin}") ||
    die "Debian 13's loader cannot list $server's libraries: $list"
  outside=$(echo "$list" | grep -v -e linux-vdso -e "=> $root/" -e "^[[:space:]]*$root/" || true)
  [[ -z $outside ]] || die "$server needs libraries not unpacked in $root (add their packages):
$outside"
}

wrapper() {
  local server=$1 bin=binary_$1 out=$dir/bin/$1
  mkdir -p "$dir/bin" "$dir/libexec"
  # The loader under the server's name, so that the process is called
  # nginx (haproxy) in ps and /proc/PID/comm, not ld-linux-x86-64.
  ln -sfn "$loader" "$dir/libexec/$server"
  {
    echo "#!/bin/sh"
    echo "# Debian 13's $server, from scripts/trixie-servers.sh: its binary under"
    echo "# Debian 13's loader, with the libraries of $root only."
    echo "exec \"$dir/libexec/$server\" --inhibit-cache --library-path \"$libdir\" --argv0 \"\$0\" \"$root/${!bin}\" \"\$@\""
  } >"$out.new"
  chmod 755 "$out.new"
  mv "$out.new" "$out"
}

todo=()
for server in "${servers[@]}"; do
  if [[ ${H3LAB_TRIXIE_REFRESH:-} == 1 ]] || ! ready "$server"; then
    todo+=("$server")
  fi
done

if [[ ${#todo[@]} -gt 0 ]]; then
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "needs apt-get and dpkg-deb (Debian)"
  apt_private
  echo "trixie-servers: apt-get update (trixie, private lists in $dir/apt)"
  apt-get update -q >/dev/null ||
    die "apt-get update failed for: $(cat "$dir/apt/etc/sources.list") (a keyring without Debian 13's keys needs debian-archive-keyring from bookworm-updates)"
  mkdir -p "$root"
  for server in "${todo[@]}"; do
    rm -f "$dir/.$server.stamp"
    fetch "$server"
    check_libs "$server"
    wrapper "$server"
    ready_check=$("$dir/bin/$server" -v 2>&1) || die "$dir/bin/$server does not run: $ready_check"
    cp "$dir/.$server.debs" "$dir/.$server.stamp"
  done
  ln -sfn root/etc "$dir/etc"
  # Packages an earlier refresh fetched and no server uses now.
  for deb in "$dir"/debs/*.deb; do
    [[ -e $deb ]] || continue
    grep -qxF "${deb##*/}" "$dir"/.*.debs || rm -f "$deb"
  done
fi

for server in "${servers[@]}"; do
  case $server in
    nginx)
      echo "== $dir/bin/nginx -V"
      "$dir/bin/nginx" -V 2>&1
      [[ $("$dir/bin/nginx" -V 2>&1) == *--with-http_v3_module* ]] || die "this nginx lacks http_v3_module"
      ;;
    haproxy)
      echo "== $dir/bin/haproxy -vv (QUIC lines)"
      "$dir/bin/haproxy" -vv 2>&1 | sed -n '1,2p'
      "$dir/bin/haproxy" -vv 2>&1 | grep -E 'USE_QUIC|QUIC|OpenSSL library|Built with OpenSSL|Running on OpenSSL' |
        sed 's/^/  /' | head -n 8
      [[ $("$dir/bin/haproxy" -vv 2>&1) == *+QUIC* ]] || die "this haproxy lacks QUIC"
      ;;
  esac
done
