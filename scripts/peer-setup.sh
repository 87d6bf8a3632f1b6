#!/usr/bin/env bash
# Installs the `servers` preset's HTTP/3 peers that Debian does not
# package, each pinned, from a registry this project reaches, under DIR
# (nothing goes into the system):
#   bun        Bun 1.4.5 (npm @oven/bun-linux-x64): lsquic; h1 and h3
#   hypercorn  hypercorn 0.18.0 + aioquic 1.7.2 + starlette 1.10.0 (PyPI):
#              aioquic's QUIC; h1, h2 and h3
#   peregrine  peregrine-server 1.2.0 (PyPI): its own QUIC; h1, h2 and h3
#   picoquic   aiopquic 0.6.1 (PyPI, Python 3.12): picoquic 1.1.53 and its
#              h3zero; h3 only
#   kwik       kwik 0.10.8 + flupke 0.9.4 (Maven Central), with
#              scripts/peers/KwikServer.java: pure-Java QUIC; h3 only.
#              One fix, scripts/peers/kwik-send-request-race.patch, goes
#              into kwik's sources jar (docs/servers.md says why)
#   tquic      tquic_tools 1.6.0 (crates.io): Tencent's QUIC; h3 only.
#              Builds BoringSSL with cmake: about 5 minutes on 2 cores.
#   xnet       golang.org/x/net v0.59.0 (Go proxy): Go's own QUIC
#              (x/net/quic) with a copy of x/net's internal HTTP/3 server,
#              built with scripts/peers/xnet-h3-server; h1, h2 (net/http)
#              and h3
#   quiche     scripts/quiche-server (tokio-quiche 0.20.1, quiche 0.30.0, as
#              its Cargo.lock pins them), built into its own target folder
#              there; h3 only. Builds BoringSSL: about 5 minutes.
# Usage: scripts/peer-setup.sh [NAME...|quick|built|all]   (default all)
#   quick: the six that download (xnet builds Go in about a minute);
#   built: tquic and quiche, which build BoringSSL (about 12 minutes in all
#   on 2 cores). CI installs the quick ones; the servers preset's test
#   takes the built ones too with H3LAB_ALL_PEERS=1 (docs/servers.md).
#   DIR is H3LAB_PEERS_DIR, /opt/h3lab-ci/peers by default.
# Needs: npm (bun), python3 with venv (hypercorn, peregrine), a Python 3.12
# (picoquic: python3.12 on PATH, or pyenv's), a JDK 11+ and Maven (kwik),
# cargo, cmake and a C++ compiler (tquic, quiche), libclang (quiche), Go
# 1.26 or later (xnet).
# Idempotent: a peer already installed at its pinned version, whose
# program runs, is kept as it is. Ends by printing each one's version.
set -euo pipefail

die() { echo "peer-setup: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
quick=(bun hypercorn peregrine picoquic kwik xnet)
built=(tquic quiche)
all=("${quick[@]}" "${built[@]}")
names=()
for arg in "${@:-all}"; do
  case $arg in
    all) names+=("${all[@]}") ;;
    quick) names+=("${quick[@]}") ;;
    built) names+=("${built[@]}") ;;
    *)
      [[ " ${all[*]} " == *" $arg "* ]] || die "unknown peer '$arg': ${all[*]}, or quick, built or all"
      names+=("$arg")
      ;;
  esac
done

dir=${H3LAB_PEERS_DIR:-/opt/h3lab-ci/peers}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
exec 9>"$dir/.lock"
flock 9

bun_version=1.4.5
hypercorn_pins=(aioquic==1.7.2 hypercorn==0.18.0 starlette==1.10.0)
peregrine_pins=(peregrine-server==1.2.0)
picoquic_pins=(aiopquic==0.6.1)
kwik_flupke_version=0.9.4
kwik_version=0.10.8
tquic_version=1.6.0
xnet_version=v0.59.0

# What NAME's stamp must say to count as installed: its pins, and for
# kwik and xnet the source they compile.
wanted() {
  case $1 in
    bun) echo "$bun_version" ;;
    hypercorn) echo "${hypercorn_pins[*]}" ;;
    peregrine) echo "${peregrine_pins[*]}" ;;
    picoquic) echo "${picoquic_pins[*]}" ;;
    kwik) echo "flupke $kwik_flupke_version kwik $kwik_version $(cat "$here"/peers/{KwikServer.java,kwik-send-request-race.patch} | sha256sum | cut -c1-16)" ;;
    tquic) echo "$tquic_version" ;;
    xnet) echo "golang.org/x/net $xnet_version $(cat "$here"/peers/xnet-h3-server/{main.go,export.go.txt} | sha256sum | cut -c1-16)" ;;
    quiche) cat "$here"/quiche-server/{Cargo.lock,src/main.rs} | sha256sum | cut -c1-16 ;;
  esac
}

# NAME's version line, from the installed program itself.
version() {
  case $1 in
    bun) echo "bun $("$dir/bun/package/bin/bun" --version) (lsquic)" ;;
    hypercorn) "$dir/hypercorn/bin/python" -c 'from importlib.metadata import version as v
print("hypercorn %s, aioquic %s, starlette %s" % (v("hypercorn"), v("aioquic"), v("starlette")))' ;;
    peregrine) "$dir/peregrine/bin/python" -c 'from importlib.metadata import version as v
print("peregrine-server %s" % v("peregrine-server"))' ;;
    picoquic) "$dir/picoquic/bin/python" -c 'import aiopquic; from aiopquic import _build_info as b
print(f"aiopquic {aiopquic.__version__}, picoquic {b.PICOQUIC_VERSION} ({b.PICOQUIC_SHA[:12]})")' ;;
    kwik)
      [[ -f $dir/kwik/patched/tech/kwik/core/stream/StreamOutputStreamImpl.class ]] || return 1
      echo "$( (cd "$dir/kwik/lib" && ls kwik-*.jar flupke-*.jar agent15-*.jar qpack-*.jar) | sed 's/\.jar$//' | paste -sd' ') + kwik-send-request-race.patch"
      ;;
    tquic) echo "tquic_$("$dir/tquic/bin/tquic_server" --version)" ;;
    xnet) "$dir/xnet/xnet-h3-server" -version ;;
    quiche)
      [[ -x $here/quiche-server/target/release/quiche-server ]] || return 1
      sed -n '/^name = "\(tokio-quiche\|quiche\)"$/{N;s/name = "\(.*\)"\nversion = "\(.*\)"/\1 \2/p}' \
        "$here/quiche-server/Cargo.lock" | paste -sd' '
      ;;
  esac
}

ready() {
  [[ -f $dir/.$1.stamp && $(cat "$dir/.$1.stamp") == "$(wanted "$1")" ]] && version "$1" >/dev/null 2>&1
}

venv_with() {
  local python=$1 venv=$2
  shift 2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --only-binary=:all: "$@"
}

python312() {
  local candidate
  for candidate in "$(command -v python3.12 || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12.*/bin/python3.12; do
    # pyenv's shim is on PATH even where it has no 3.12 selected.
    [[ -x $candidate ]] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null &&
      { echo "$candidate"; return; }
  done
  die "picoquic needs Python 3.12 (aiopquic 0.6.1 ships cp312 wheels only): install python3.12, or pyenv install 3.12"
}

# Maven in $dir/kwik with a repository of its own; quiet Maven still
# prints colour resets, so its output shows only when it fails.
maven() {
  local out
  out=$(cd "$dir/kwik" && mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$dir/kwik/m2" "$@" 2>&1) ||
    { echo "$out" >&2; die "kwik: mvn $* failed"; }
}

install() {
  case $1 in
    bun)
      command -v npm >/dev/null || die "bun needs npm: apt-get install npm"
      rm -rf "$dir/bun" && mkdir -p "$dir/bun"
      (cd "$dir/bun" && npm pack -q "@oven/bun-linux-x64@$bun_version" >/dev/null && tar xzf oven-bun-linux-x64-*.tgz && rm oven-bun-linux-x64-*.tgz)
      ;;
    hypercorn) venv_with python3 "$dir/hypercorn" "${hypercorn_pins[@]}" ;;
    peregrine) venv_with python3 "$dir/peregrine" "${peregrine_pins[@]}" ;;
    picoquic) venv_with "$(python312)" "$dir/picoquic" "${picoquic_pins[@]}" ;;
    kwik)
      command -v mvn >/dev/null || die "kwik needs Maven: apt-get install maven"
      command -v javac >/dev/null || die "kwik needs a JDK: apt-get install default-jdk-headless"
      command -v patch >/dev/null || die "kwik's fix goes in with patch(1): apt-get install patch"
      rm -rf "$dir/kwik" && mkdir -p "$dir/kwik"
      cat > "$dir/kwik/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>h3lab</groupId>
  <artifactId>kwik-peer</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>tech.kwik</groupId>
      <artifactId>flupke</artifactId>
      <version>$kwik_flupke_version</version>
    </dependency>
  </dependencies>
</project>
POM
      maven dependency:copy-dependencies -DoutputDirectory=lib
      [[ -f $dir/kwik/lib/kwik-$kwik_version.jar ]] || die "flupke $kwik_flupke_version brought $(cd "$dir/kwik/lib" && ls kwik-*.jar), not kwik $kwik_version, which the patch is for"
      # The one class scripts/peers/kwik-send-request-race.patch fixes, from
      # kwik's own sources, compiled ahead of its jar (peer-server.sh).
      maven dependency:copy -Dartifact="tech.kwik:kwik:$kwik_version:jar:sources" -DoutputDirectory=src
      rm -rf "$dir/kwik/m2"
      (cd "$dir/kwik/src" && jar xf "kwik-$kwik_version-sources.jar" tech/kwik/core/stream/StreamOutputStreamImpl.java &&
        patch -s -p1 < "$here/peers/kwik-send-request-race.patch")
      javac -nowarn -d "$dir/kwik/patched" -cp "$dir/kwik/lib/*" "$dir/kwik/src/tech/kwik/core/stream/StreamOutputStreamImpl.java"
      javac -d "$dir/kwik/classes" -cp "$dir/kwik/lib/*" "$here/peers/KwikServer.java"
      ;;
    tquic)
      command -v cmake >/dev/null || die "tquic builds BoringSSL with cmake: apt-get install cmake g++"
      cargo install -q --locked tquic_tools --version "$tquic_version" --root "$dir/tquic"
      ;;
    xnet)
      command -v go >/dev/null || die "xnet needs Go 1.26 or later: https://go.dev/dl"
      # x/net exports its QUIC but keeps its HTTP/3 server internal: copy
      # that (internal/http3, and internal/httpcommon, the one internal
      # package it imports) into a module of our own, with x/net's
      # LICENSE, and build it against x/net's public packages.
      local src=$dir/xnet/src module=h3lab.test/xnet-h3-server json xnet pkg
      rm -rf "$dir/xnet" && mkdir -p "$src/internal"
      json=$(cd "$src" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "golang.org/x/net@$xnet_version") ||
        die "cannot download golang.org/x/net@$xnet_version: $json"
      xnet=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' <<< "$json")
      [[ -d $xnet/internal/http3 ]] || die "golang.org/x/net@$xnet_version has no internal/http3 (at '$xnet')"
      for pkg in http3 httpcommon; do
        mkdir -p "$src/internal/$pkg"
        find "$xnet/internal/$pkg" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cp {} "$src/internal/$pkg/" \;
      done
      cp "$xnet/LICENSE" "$xnet/PATENTS" "$src/internal/"
      chmod -R u+w "$src"
      sed -i "s#\"golang.org/x/net/internal/#\"$module/internal/#" "$src"/internal/*/*.go
      ! grep -n '"golang.org/x/net/internal/' "$src"/internal/*/*.go || die "x/net's HTTP/3 needs another internal package"
      cp "$here/peers/xnet-h3-server/export.go.txt" "$src/internal/http3/export.go"
      cp "$here/peers/xnet-h3-server/main.go" "$src/"
      printf 'module %s\n\ngo 1.26.0\n\nrequire golang.org/x/net %s\n' "$module" "$xnet_version" > "$src/go.mod"
      (cd "$src" && export GOTOOLCHAIN=local GOFLAGS=-mod=mod &&
        go mod tidy && go build -trimpath -buildvcs=false -o "$dir/xnet/xnet-h3-server" .)
      ;;
    quiche)
      command -v cmake >/dev/null || die "quiche builds BoringSSL with cmake: apt-get install cmake g++ libclang-dev"
      [[ -n ${LIBCLANG_PATH:-} || -n $(ls /usr/lib/llvm-*/lib/libclang.so* 2>/dev/null) ]] ||
        die "quiche's BoringSSL bindings need libclang: apt-get install libclang-dev"
      cargo build -q --release --locked --manifest-path "$here/quiche-server/Cargo.toml"
      ;;
  esac
  wanted "$1" > "$dir/.$1.stamp"
  ready "$1" || die "$1 was installed in $dir but does not run: $(version "$1" 2>&1 | tail -n 1)"
}

for name in "${names[@]}"; do
  if ready "$name"; then
    echo "$name: already installed: $(version "$name")"
  else
    echo "$name: installing $(wanted "$name" | cut -c1-60) in $dir/$name"
    install "$name"
    echo "$name: installed: $(version "$name")"
  fi
done
