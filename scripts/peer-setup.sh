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
#              scripts/peers/KwikServer.java: pure-Java QUIC; h3 only
#   tquic      tquic_tools 1.6.0 (crates.io): Tencent's QUIC; h3 only.
#              Builds BoringSSL with cmake: about 5 minutes on 2 cores.
# Usage: scripts/peer-setup.sh [NAME...|all]            (default all)
#   DIR is H3LAB_PEERS_DIR, /opt/h3lab-ci/peers by default.
# Needs: npm (bun), python3 with venv (hypercorn, peregrine), a Python 3.12
# (picoquic: python3.12 on PATH, or pyenv's), a JDK 11+ and Maven (kwik),
# cargo, cmake and a C++ compiler (tquic).
# Idempotent: a peer already installed at its pinned version, whose
# program runs, is kept as it is. Ends by printing each one's version.
set -euo pipefail

die() { echo "peer-setup: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
all=(bun hypercorn peregrine picoquic kwik tquic)
names=("$@")
[[ ${#names[@]} -gt 0 && ${names[0]} != all ]] || names=("${all[@]}")
for name in "${names[@]}"; do
  [[ " ${all[*]} " == *" $name "* ]] || die "unknown peer '$name': ${all[*]} or all"
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
tquic_version=1.6.0

# What NAME's stamp must say to count as installed: its pins, and for
# kwik the source it compiles.
wanted() {
  case $1 in
    bun) echo "$bun_version" ;;
    hypercorn) echo "${hypercorn_pins[*]}" ;;
    peregrine) echo "${peregrine_pins[*]}" ;;
    picoquic) echo "${picoquic_pins[*]}" ;;
    kwik) echo "flupke $kwik_flupke_version $(sha256sum < "$here/peers/KwikServer.java" | cut -c1-16)" ;;
    tquic) echo "$tquic_version" ;;
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
    kwik) (cd "$dir/kwik/lib" && ls kwik-*.jar flupke-*.jar agent15-*.jar qpack-*.jar) | sed 's/\.jar$//' | paste -sd' ' ;;
    tquic) echo "tquic_$("$dir/tquic/bin/tquic_server" --version)" ;;
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
      (cd "$dir/kwik" && mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$dir/kwik/m2" dependency:copy-dependencies -DoutputDirectory=lib)
      rm -rf "$dir/kwik/m2"
      javac -d "$dir/kwik/classes" -cp "$dir/kwik/lib/*" "$here/peers/KwikServer.java"
      ;;
    tquic)
      command -v cmake >/dev/null || die "tquic builds BoringSSL with cmake: apt-get install cmake g++"
      cargo install -q --locked tquic_tools --version "$tquic_version" --root "$dir/tquic"
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
