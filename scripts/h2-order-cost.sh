#!/usr/bin/env bash
# What h2's stream scheduler costs: h2 requests per second and the server's
# CPU seconds with `--h2-stream-order priority` against `fair`, on loopback,
# one server thread, the two interleaved over ROUNDS rounds in one run.
# A benchmark, not a test: compare the ratio within one run.
#   ROUNDS=3 REQUESTS=60000 bash scripts/h2-order-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
h3lab=${H3LAB:-target/release/h3lab}
rounds=${ROUNDS:-3}
requests=${REQUESTS:-60000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
[ -x "$h3lab" ] || { echo "build it first: cargo build --release (or set H3LAB)" >&2; exit 1; }
for round in $(seq "$rounds"); do
  for order in priority fair; do
    "$h3lab" serve --listen 127.0.0.1:0 --threads 1 --h2-stream-order "$order" > "$out/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 50); do grep -q '^listening:' "$out/serve.log" && break; sleep 0.1; done
    addr=$(awk '/^listening:/ {print $3}' "$out/serve.log")
    "$h3lab" load "https://$addr/bytes/1000" --insecure --proto h2 -c 10 -m 10 -n "$requests" \
      --threads 1 --json "$out/load.json" > /dev/null
    server_cpu=$(awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$pid/stat")
    kill -INT "$pid"
    wait "$pid" 2> /dev/null || true
    rps=$(python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["requests_per_sec"]))' "$out/load.json")
    echo "round $round  $order  $rps req/s  server CPU ${server_cpu} s for $requests requests"
  done
done
