#!/usr/bin/env bash
# 1 KB requests on loopback, h3 and h2, server and client of one h3lab
# binary, two binaries alternating: requests/s, the client's requests per
# CPU-second and the server's CPU per request (from /proc), per round.
#
# BEFORE=PATH (required) AFTER=PATH [target/release/h3lab] ROUNDS=3
# REQUESTS=100000 PORT=9743 OUT=DIR (keeps each run's JSON)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BEFORE:?set BEFORE to the h3lab binary to compare against}"
AFTER=${AFTER:-target/release/h3lab}
ROUNDS=${ROUNDS:-3}; REQUESTS=${REQUESTS:-100000}; PORT=${PORT:-9743}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
for binary in "$BEFORE" "$AFTER"; do
    [[ -x $binary ]] || { echo "$binary is not an executable h3lab binary" >&2; exit 1; }
done
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for round in $(seq "$ROUNDS"); do
    for name in before after; do
        binary=$BEFORE; [[ $name == after ]] && binary=$AFTER
        for proto in h3 h2; do
            "$binary" serve --listen "127.0.0.1:$PORT" >"$OUT/serve.log" 2>&1 &
            server=$!
            trap 'kill $server 2>/dev/null' EXIT
            for _ in $(seq 100); do
                grep -q '^listening:' "$OUT/serve.log" && break
                kill -0 "$server" 2>/dev/null || { cat "$OUT/serve.log" >&2; exit 1; }
                sleep 0.1
            done
            grep -q '^listening:' "$OUT/serve.log" ||
                { echo "h3lab serve did not report listening within 10 s" >&2; exit 1; }
            before_ticks=$(cpu_ticks "$server")
            json=$OUT/$name-$proto-$round.json
            "$binary" load "https://127.0.0.1:$PORT/bytes/1000" --proto "$proto" -c 10 -m 10 \
                -n "$REQUESTS" --insecure -q --threads 1 --json "$json" >/dev/null
            server_ticks=$(( $(cpu_ticks "$server") - before_ticks ))
            kill "$server"; wait "$server" 2>/dev/null || true
            python3 - "$json" "$server_ticks" "$name" "$proto" "$round" <<'PY'
import json, os, sys
report = json.load(open(sys.argv[1]))
server_s = int(sys.argv[2]) / os.sysconf("SC_CLK_TCK")
print(f"round {sys.argv[5]} {sys.argv[3]:6} {sys.argv[4]}: {report['requests_per_sec']:9.0f} req/s, "
      f"client {report['cpu']['requests_per_cpu_s']:9.0f} req/CPU-s, "
      f"server {server_s / report['completed'] * 1e6:5.2f} us/req")
PY
        done
    done
done
