#!/usr/bin/env bash
# Header-block bytes of h3lab's --browser-headers set over h3 (nghttp3) and h2 (nghttp2),
# with and without the dynamic table. See README.md.
#
#   bash scripts/qpack-tables/run.sh [-v]      (-v: also how each field was encoded)
#
# Environment: QPACK_REQUESTS (GETs per connection, default 10), QPACK_PORT (first of 4 loopback
# ports, default 24460), QPACK_VENV (venv with pylsqpack and hpack, default
# /tmp/qpack-tables-venv, created when missing and kept for the next run).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
requests=${QPACK_REQUESTS:-10}
port=${QPACK_PORT:-24460}
venv=${QPACK_VENV:-/tmp/qpack-tables-venv}
verbose=
[ "${1:-}" = -v ] && verbose=-v
PATH=$PATH:/usr/sbin

die() { echo "run.sh: $*" >&2; exit 1; }

need() { # command, Debian package
  command -v "$1" >/dev/null || die "$1 not found: apt-get install $2"
}
need gtlsclient ngtcp2-client
need gtlsserver ngtcp2-server
need nghttp nghttp2-client
need nghttpd nghttp2-server
need gcc gcc
need openssl openssl
need python3 python3
[ -f /usr/include/nghttp3/nghttp3.h ] || die "nghttp3/nghttp3.h not found: apt-get install libnghttp3-dev"

tmp=$(mktemp -d /tmp/qpack-tables.XXXXXX)
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! "$venv/bin/python" -c 'import pylsqpack, hpack' 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv" >/dev/null 2>&1 || { rm -rf "$venv"; die "python3 -m venv failed: apt-get install python3-venv"; }
  "$venv/bin/pip" install -q pylsqpack==1.0.0 hpack==4.2.0 \
    || { rm -rf "$venv"; die "pip install pylsqpack hpack failed (needs PyPI)"; }
fi
py=$venv/bin/python

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null
gcc -O2 -Wall -Wextra -shared -fPIC -o "$tmp/shim.so" "$here/shim.c" -ldl
gcc -O2 -Wall -Wextra -shared -fPIC -o "$tmp/shim_h2.so" "$here/shim_h2.c" -ldl
mkdir -p "$tmp/htdocs/r"
for i in $(seq "$requests"); do echo "hello $i" > "$tmp/htdocs/r/$i"; done

# One case: its directory, meta and request header lists; sets $dir and $uris.
new_case() { # name, port, meta
  dir=$tmp/$1
  mkdir -p "$dir/qlog-srv"
  echo "$3" > "$dir/meta"
  "$py" "$here/analyze.py" requests "$here/headers.txt" "$2" "$requests" "$dir/reqs"
  uris=()
  for i in $(seq "$requests"); do uris+=("https://localhost:$2/r/$i"); done
}

start_server() { # log file, command...
  local log=$1
  shift
  "$@" > "$log" 2>&1 &
  server=$!
  sleep 0.5
  kill -0 "$server" 2>/dev/null || die "server did not start (port busy? set QPACK_PORT): $(cat "$log")"
}

stop_server() { # signal
  sleep 0.3
  kill "-$1" "$server"
  wait "$server" 2>/dev/null || true
  server=
}

h3_case() { # name, port, meta, extra environment for both ends (SHIM_DEC_CAP=0 or nothing)
  new_case "$1" "$2" "$3"
  local p=$2
  shift 3
  start_server "$dir/srv.log" env LD_PRELOAD="$tmp/shim.so" SHIM_LOG="$dir/srv.bytes" "$@" \
    gtlsserver -q --qlog-dir="$dir/qlog-srv" -d "$tmp/htdocs" 127.0.0.1 "$p" "$tmp/key.pem" "$tmp/cert.pem"
  env LD_PRELOAD="$tmp/shim.so" SHIM_LOG="$dir/cli.bytes" SHIM_REQS="$dir/reqs" "$@" \
    timeout 20 gtlsclient -q --qlog-file="$dir/cli.qlog" --exit-on-all-streams-close \
    127.0.0.1 "$p" "${uris[@]}" > "$dir/cli.log" 2>&1 || die "gtlsclient failed: $(tail -5 "$dir/cli.log")"
  stop_server INT # gtlsserver writes its qlog out on SIGINT
}

h2_case() { # name, port, meta, extra nghttp options
  new_case "$1" "$2" "$3"
  local p=$2
  shift 3
  start_server "$dir/srv.log" nghttpd -a 127.0.0.1 -d "$tmp/htdocs" "$p" "$tmp/key.pem" "$tmp/cert.pem"
  env LD_PRELOAD="$tmp/shim_h2.so" SHIM_LOG="$dir/h2.bytes" SHIM_REQS="$dir/reqs" \
    timeout 20 nghttp -nv --no-dep "$@" "${uris[@]}" > "$dir/cli.log" 2>&1 \
    || die "nghttp failed: $(tail -5 "$dir/cli.log")"
  stop_server TERM
}

h3_case h3-on  "$port"       'h3 h3 table on (gtlsserver defaults)'
h3_case h3-off "$((port+1))" 'h3 h3 table off (capacity 0 both ways)' SHIM_DEC_CAP=0
h2_case h2-on  "$((port+2))" 'h2 h2 table on (HPACK 4096)'
h2_case h2-off "$((port+3))" 'h2 h2 table off (nghttp --encoder-header-table-size=0)' --encoder-header-table-size=0

echo "$requests GETs on one connection per case, 127.0.0.1; bytes:"
"$py" "$here/analyze.py" report $verbose "$tmp/h3-on" "$tmp/h3-off" "$tmp/h2-on" "$tmp/h2-off"
