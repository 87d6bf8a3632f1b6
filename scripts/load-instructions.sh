#!/usr/bin/env bash
# Instructions the load generator's user space executes per request
# (valgrind's callgrind), for h3lab binaries and optionally shb, each against
# one `h3lab serve --threads 1` on loopback: 1 KB responses, 10 connections
# of 10 streams, one client thread. Each client runs twice, SMALL and LARGE
# requests; the difference over LARGE - SMALL requests is the cost of a
# request without the start-up's and the handshakes'. Unlike CPU time on a
# shared machine, the count barely moves from run to run, so two builds
# compare within a fraction of a percent (docs/performance.md, the
# fourteenth and fifteenth rounds).
#
# Usage: scripts/load-instructions.sh BINARY... (each an h3lab binary; the
# first also serves). Settings (environment): PROTO=h3 SMALL=20000
# LARGE=60000 SHB=1 (also count shb's, with --batch-size 1: it reads each
# completion as it comes, as h3lab does) OUT=DIR (keeps callgrind's files).
# Needs valgrind. Prints one line per client: instructions per request.
set -euo pipefail

PROTO=${PROTO:-h3}
SMALL=${SMALL:-20000}
LARGE=${LARGE:-60000}
out=${OUT:-$(mktemp -d -t h3lab-instructions.XXXXXX)}
mkdir -p "$out"

die() { echo "load-instructions: $*" >&2; exit 1; }
[[ $# -ge 1 ]] || die "usage: $0 BINARY... (h3lab binaries to count)"
[[ $PROTO =~ ^h[123]$ ]] || die "PROTO=$PROTO: h1, h2 or h3"
((LARGE > SMALL)) || die "LARGE ($LARGE) must be more than SMALL ($SMALL)"
command -v valgrind >/dev/null || die "needs valgrind: apt-get install valgrind"
for binary in "$@"; do
    [[ -x $binary ]] || die "$binary is not an executable h3lab binary"
done
shb=
if [[ ${SHB:-} == 1 ]]; then
    shb=$(command -v shb || echo "$HOME/.cargo/bin/shb")
    [[ -x $shb ]] || die "SHB=1 but shb is not installed: cargo install shb --version 0.6.0 --locked"
fi

"$1" serve --listen 127.0.0.1:0 --threads 1 >"$out/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    grep -q '^listening:' "$out/serve.log" && break
    kill -0 "$server" 2>/dev/null || { cat "$out/serve.log" >&2; die "h3lab serve exited"; }
    sleep 0.1
done
port=$(sed -n 's/^listening: .*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out/serve.log")
[[ -n $port ]] || die "h3lab serve did not report its port within 10 s"
url=https://127.0.0.1:$port/bytes/1000
streams=10
[[ $PROTO == h1 ]] && streams=1

# Total instructions of one run of "$@" with N requests (the command's
# own -n), from callgrind's summary.
count() {
    local file=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file="$file" "$@" >"$file.log" 2>&1 ||
        die "$* failed under valgrind (see $file.log)"
    grep -o 'Collected : [0-9]*' "$file.log" | awk '{print $3}' ||
        die "no callgrind summary in $file.log"
}

# One client's count: per_request LABEL FILE COMMAND... (FILE names
# callgrind's files in $out).
per_request() {
    local name=$1 file=$2 small large
    shift 2
    small=$(count "$out/$file.small" "$@" -n "$SMALL")
    large=$(count "$out/$file.large" "$@" -n "$LARGE")
    awk -v name="$name" -v s="$small" -v l="$large" -v n=$((LARGE - SMALL)) \
        'BEGIN { printf "%-40s %8.0f instructions per request\n", name, (l - s) / n }'
}

index=0
for binary in "$@"; do
    index=$((index + 1))
    per_request "$binary" "h3lab-$index" "$binary" load "$url" --insecure -q --proto "$PROTO" \
        -c 10 -m "$streams" --threads 1
done
if [[ -n $shb ]]; then
    flags=()
    [[ $PROTO == h2 ]] && flags=(--http2 -p "$streams")
    [[ $PROTO == h3 ]] && flags=(--http3 -p "$streams")
    per_request "shb --batch-size 1" shb "$shb" "$url" -c 10 -t 1 --batch-size 1 ${flags[@]+"${flags[@]}"}
fi
echo "callgrind's files: $out"
