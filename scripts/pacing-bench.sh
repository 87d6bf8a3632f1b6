#!/usr/bin/env bash
# How precisely the open model sends, and at what CPU cost: `h3lab load
# --rate R` against one `h3lab serve` on loopback for R = 200, 2000 and
# 20000 req/s over h1 and h3 (GET /bytes/100, -c 4, 3 s), each case REPS
# times, interleaved with BASELINE's runs when given. Prints medians of the
# send lag (p50/p99, µs), the open-model latency p50 and the generator's CPU.
# See docs/load-schema.md, "Pacing the open model".
#
# Settings (environment): REPS=3 RATES="200 2000 20000" PROTOS="h1 h3"
# NO_BUILD=1 (measure target/release/h3lab as it is), BASELINE=PATH (also
# measure another h3lab binary, e.g. an older build).
set -euo pipefail

REPS=${REPS:-3}
RATES=${RATES:-200 2000 20000}
PROTOS=${PROTOS:-h1 h3}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d -t h3lab-pacing-bench.XXXXXX)

die() { echo "pacing-bench: $*" >&2; exit 1; }
command -v python3 >/dev/null || die "python3 is needed to read the results: apt-get install python3"

h3lab=$root/target/release/h3lab
[ -n "${NO_BUILD:-}" ] || (cd "$root" && cargo build --release --locked -p h3lab >&2)
[ -x "$h3lab" ] || die "no $h3lab: build it with cargo build --release"
tools=("$h3lab")
if [ -n "${BASELINE:-}" ]; then
  [ -x "$BASELINE" ] || die "BASELINE=$BASELINE is not an executable"
  tools+=("$BASELINE")
fi

"$h3lab" serve --listen 127.0.0.1:0 --write-cert "$out/cert.pem" > "$out/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q '^listening:' "$out/serve.log" && break; sleep 0.1; done
addr=$(awk '/^listening:/ {print $3}' "$out/serve.log")
[ -n "$addr" ] || die "h3lab serve did not start: $(cat "$out/serve.log")"

for rep in $(seq "$REPS"); do
  for tool in "${tools[@]}"; do
    for rate in $RATES; do
      for proto in $PROTOS; do
        name="$(basename "$tool")-$rate-$proto-$rep"
        [ "$tool" = "$h3lab" ] && name="current-$rate-$proto-$rep"
        "$tool" load "https://$addr/bytes/100" --ca "$out/cert.pem" --proto "$proto" \
          -c 4 --rate "$rate" -z 3s -q --json "$out/$name.json" > /dev/null 2>&1 || true
      done
    done
  done
done

python3 - "$out" <<'PY'
import collections, glob, json, os, statistics, sys
runs = collections.defaultdict(list)
for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
    tool, rate, proto, _ = os.path.basename(path)[:-5].rsplit("-", 3)
    report = json.load(open(path))
    lag = report["open_model"]["lag_us"]
    cpu = report["cpu"]["user_s"] + report["cpu"]["sys_s"]
    runs[(int(rate), proto, tool)].append((lag["p50"], lag["p99"], report["latency_us"]["p50"], cpu))
print(f"{'rate':>6} {'proto':<5} {'tool':<16} {'lag p50 µs':>10} {'lag p99 µs':>10} {'latency p50 µs':>14} {'CPU-s':>6}  n")
for key in sorted(runs):
    values = runs[key]
    med = lambda i: statistics.median(v[i] for v in values)
    print(f"{key[0]:>6} {key[1]:<5} {key[2]:<16} {med(0):>10.0f} {med(1):>10.0f} {med(2):>14.0f} {med(3):>6.2f}  {len(values)}")
print("(the lag of a baseline from before 2026-11-23 covers only sends more than 1 ms late)")
PY
