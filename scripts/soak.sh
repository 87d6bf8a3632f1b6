#!/usr/bin/env bash
# Soak: MINUTES (default 10) of mixed h1, h2 and h3 load against one
# `h3lab serve` behind an emulated lossy path (`h3lab net run`, the
# cellular profile: 50 ms RTT, 50/10 Mbit/s, 1 % loss downstream), with
# connection churn all the time. A benchmark, not a CI test; needs root.
#
# Each minute, at once:
# - steady load, one per protocol: open model, 40 requests/s of /bytes/1000
#   on 4 connections (h1 serves 80/s on them at this RTT). Its p99 per
#   minute is the figure to watch;
# - churn, round after round, rotating the protocol: a short load on 4 new
#   connections; a client killed (SIGKILL) mid-body of a 5 MB download; a
#   load whose 2 MB bodies time out after 200 ms (the client resets them);
#   three h3 connections whose requests go in 0-RTT;
# - a page load of a generated cms site every 5 s, rotating the protocol.
# Every 5 s it samples the server's resident memory, open descriptors and
# threads, and at the end the server's own counters (--metrics).
#
# It passes when, after the first minute, memory grows less than 10 %, the
# server holds as many descriptors idle after the load as idle before it,
# the steady loads, the short churn loads and the page loads have no error,
# and no protocol's p99 per minute rises over the soak (a rank trend test:
# at 1 % loss a minute's p99 jumps between two levels, soak-summary.py).
# The killed and timed-out clients' errors are on purpose: they are counted
# and shown, not judged.
#
# Settings (environment): NO_BUILD=1 (use target/release/h3lab as it is),
# H3LAB=PATH (another h3lab binary), SOAK_DIR=DIR (keep the results there;
# default a new directory under /tmp, printed at the end).
set -euo pipefail

die() { echo "soak: $*" >&2; exit 1; }

if [ "${1:-}" = "--inside" ]; then
  inside=1
  shift
else
  inside=0
fi
minutes=${1:-10}
[[ $minutes =~ ^[1-9][0-9]*$ ]] || die "MINUTES must be a whole number of minutes, e.g. scripts/soak.sh 10 (got '$minutes')"

# The driver: runs in the client namespace of the emulated path.
drive() {
  local dir=$1 h3lab=$2
  local ip=$H3LAB_SERVER_IP base="https://$H3LAB_SERVER_IP"
  local ca=(--ca "$dir/cert.pem")
  local protos=(h1 h2 h3)
  for _ in $(seq 100); do [ -s "$dir/cert.pem" ] && [ -s "$dir/server.pid" ] && break; sleep 0.1; done
  [ -s "$dir/cert.pem" ] || die "the server wrote no certificate: see $dir/server.log"
  local server_pid
  server_pid=$(cat "$dir/server.pid")
  "$h3lab" load "$base/health" "${ca[@]}" --proto h2 -n 1 -q > /dev/null ||
    die "the server does not answer: see $dir/server.log"
  sample_server "$server_pid" > "$dir/idle-before.txt"
  scrape_metrics "$ip" > "$dir/metrics-before.txt"

  local started=$SECONDS end=$((SECONDS + 60 * minutes))
  sample_loop "$server_pid" "$started" "$end" > "$dir/server.csv" &
  local sampler=$!
  page_loop "$h3lab" "$base" "$dir" "$end" &
  local pages=$!
  churn_loop "$h3lab" "$base" "$dir" "$end" &
  local churn=$!
  for minute in $(seq "$minutes"); do
    local left=$((60 * minute - (SECONDS - started)))
    for proto in "${protos[@]}"; do
      "$h3lab" load "$base/bytes/1000" "${ca[@]}" --proto "$proto" -c 4 --rate 40 \
        -z "$((left - 2))s" -q --json "$dir/steady-$minute-$proto.json" \
        > /dev/null 2>> "$dir/steady.log" &
    done
    wait_for_jobs_except "$sampler" "$pages" "$churn"
    report_minute "$dir" "$minute" "$minutes" "$server_pid" "$((SECONDS - started))"
  done
  wait "$pages" "$churn" || true
  wait "$sampler" || true
  # Idle keep-alive connections close at the server's 10 s header timeout,
  # and a killed client's QUIC connection at the 30 s idle timeout; then
  # nothing of the load may be held.
  sleep 40
  sample_server "$server_pid" > "$dir/idle-after.txt"
  scrape_metrics "$ip" > "$dir/metrics-after.txt"
}

wait_for_jobs_except() {
  local pid
  for pid in $(jobs -p); do
    case " $* " in *" $pid "*) ;; *) wait "$pid" || true ;; esac
  done
}

# "rss_kb fds threads" of the server process.
sample_server() {
  local pid=$1
  local rss threads fds
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
  threads=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status")
  fds=$(ls "/proc/$pid/fd" | wc -l)
  echo "$rss $fds $threads"
}

sample_loop() {
  local pid=$1 started=$2 end=$3
  echo "t_s,rss_kb,fds,threads"
  while [ "$SECONDS" -lt "$end" ]; do
    [ -d "/proc/$pid" ] || die "the server (pid $pid) exited during the soak"
    echo "$((SECONDS - started)),$(sample_server "$pid" | tr ' ' ,)"
    sleep 5
  done
}

scrape_metrics() {
  python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
    "http://$1:9464/metrics"
}

page_loop() {
  local h3lab=$1 base=$2 dir=$3 end=$4 n=0
  while [ $((SECONDS + 5)) -lt "$end" ]; do
    local proto=${protos[$((n % 3))]}
    n=$((n + 1))
    if "$h3lab" page "$base/" "${ca[@]}" --proto "$proto" -n 1 -q \
      --json "$dir/page-$n-$proto.json" > /dev/null 2>> "$dir/page.log"; then
      echo "ok $proto" >> "$dir/pages.txt"
    else
      echo "failed $proto" >> "$dir/pages.txt"
    fi
    sleep 5
  done
}

churn_loop() {
  local h3lab=$1 base=$2 dir=$3 end=$4 n=0
  while [ $((SECONDS + 5)) -lt "$end" ]; do
    local proto=${protos[$((n % 3))]}
    n=$((n + 1))
    "$h3lab" load "$base/bytes/1000" "${ca[@]}" --proto "$proto" -c 4 -n 8 -q \
      --json "$dir/churn-$n-$proto.json" > /dev/null 2>> "$dir/churn.log" || true
    # A client that dies mid-body: its connection is never closed by it.
    # (In a subshell that reports the kill to /dev/null, not to the log.)
    (timeout -s KILL 0.4 "$h3lab" load "$base/bytes/5000000" "${ca[@]}" --proto "$proto" \
      -c 1 -n 1 -q > /dev/null 2>&1; :) 2> /dev/null || true
    echo "$proto" >> "$dir/killed.txt"
    # Requests the client gives up on: h2 and h3 reset the stream, h1 closes.
    "$h3lab" load "$base/bytes/2000000" "${ca[@]}" --proto "$proto" -c 2 -n 2 \
      --timeout 200ms -q --json "$dir/dropped-$n-$proto.json" > /dev/null 2>> "$dir/churn.log" || true
    "$h3lab" probe ttfb "$base/bytes/1000" "${ca[@]}" --proto h3 --mode 0rtt --samples 3 -q \
      --json "$dir/zero-rtt-$n.json" > /dev/null 2>> "$dir/churn.log" || echo "$n" >> "$dir/zero-rtt-failed.txt"
  done
}

report_minute() {
  local dir=$1 minute=$2 minutes=$3 pid=$4 elapsed=$5
  python3 - "$dir" "$minute" "$minutes" "$elapsed" "$(sample_server "$pid")" <<'PY'
import json, os, sys
dir, minute, minutes, elapsed, sample = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rss, fds, threads = (int(x) for x in sample.split())
p99 = []
for proto in ("h1", "h2", "h3"):
    path = os.path.join(dir, f"steady-{minute}-{proto}.json")
    try:
        report = json.load(open(path))
        p99.append(f"{proto} {report['latency_us']['p99'] / 1000:.0f} ms")
    except (OSError, ValueError):
        p99.append(f"{proto} no report")
eta = (minutes - minute) * 60
print(f"soak: minute {minute}/{minutes} (ETA {eta // 60}:{eta % 60:02d}): server {rss / 1024:.1f} MiB, "
      f"{fds} descriptors, {threads} threads; steady p99 {', '.join(p99)}", file=sys.stderr)
PY
}

if [ "$inside" = 1 ]; then
  drive "$SOAK_DIR" "$H3LAB"
  exit
fi

[ "$(id -u)" -eq 0 ] || die "run as root: the emulated path needs network namespaces (sudo scripts/soak.sh $minutes)"
command -v python3 > /dev/null || die "python3 is needed to read the results: apt-get install python3"
root=$(cd "$(dirname "$0")/.." && pwd)
H3LAB=${H3LAB:-$root/target/release/h3lab}
if [ -z "${NO_BUILD:-}" ] && [ "$H3LAB" = "$root/target/release/h3lab" ]; then
  (cd "$root" && cargo build --release --locked -p h3lab >&2)
fi
[ -x "$H3LAB" ] || die "no $H3LAB: build it with cargo build --release -p h3lab, or set H3LAB"
SOAK_DIR=${SOAK_DIR:-$(mktemp -d -t h3lab-soak.XXXXXX)}
mkdir -p "$SOAK_DIR"
export H3LAB SOAK_DIR
"$H3LAB" site gen cms --out "$SOAK_DIR/site" > /dev/null

echo "soak: $minutes min against $("$H3LAB" --version) on the cellular profile; results in $SOAK_DIR" >&2
"$H3LAB" net run --profile cellular --seed 1 --stats "$SOAK_DIR/link.json" \
  --server-cmd "echo \$\$ > $SOAK_DIR/server.pid; exec $H3LAB serve --listen \$H3LAB_SERVER_IP:443 --san \$H3LAB_SERVER_IP --site $SOAK_DIR/site --write-cert $SOAK_DIR/cert.pem --metrics \$H3LAB_SERVER_IP:9464 > $SOAK_DIR/server.log 2>&1" \
  -- bash "$root/scripts/soak.sh" --inside "$minutes"

python3 "$root/scripts/soak-summary.py" "$SOAK_DIR"
