#!/usr/bin/env bash
# How often h3lab calls a difference that is not there: an A/A run of a
# preset's workloads (`h3lab bench --aa`: every cell twice, back to back,
# as two replicas of the same protocol, server and path), then the share
# of better/worse verdicts per workload kind, with a 95 % interval, over
# disjoint blocks of BLOCKS repetitions, for the current rule (permutation
# test) and the old one (range bootstrap), both for the replicas within a
# block and for replica A of one block against A of the next (as `h3lab
# compare` of two runs made one after the other). A benchmark, not a test:
# the default preset's workloads at REPS=10 take about 30 minutes here.
# See docs/statistics.md, "Measured: false verdicts on A/A runs".
#
# Needs root (the emulated paths). Settings (environment): PRESET=default
# REPS=10 BLOCKS=3,4,5 OUT=DIR (default: a new temporary directory; its
# results.json can be calibrated again with `h3lab report RESULTS
# --calibrate BLOCKS`) NO_BUILD=1 (use target/release/h3lab as it is).
set -euo pipefail

PRESET=${PRESET:-default}
REPS=${REPS:-10}
BLOCKS=${BLOCKS:-3,4,5}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d -t h3lab-aa.XXXXXX)}

die() { echo "aa-calibration: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root: every cell runs on an emulated path in network namespaces"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "REPS=$REPS is not a positive count"

h3lab=$root/target/release/h3lab
[ -n "${NO_BUILD:-}" ] || (cd "$root" && cargo build --release --locked -p h3lab >&2)
[ -x "$h3lab" ] || die "no $h3lab: build it with cargo build --release"

mkdir -p "$out"
suite=$out/aa-suite.toml
"$h3lab" bench --show "$PRESET" | sed "s/^repetitions = .*/repetitions = $REPS/" > "$suite"
grep -q "^repetitions = $REPS\$" "$suite" || die "the $PRESET preset has no repetitions line to set"
echo "A/A of the $PRESET preset's workloads at $REPS repetitions; results in $out" >&2
"$h3lab" bench "$suite" --aa --out "$out/run" >&2
echo "== $PRESET preset, A/A, $REPS repetitions, blocks of $BLOCKS ($(date -u +%F))"
"$h3lab" report "$out/run/results.json" --calibrate "$BLOCKS"
