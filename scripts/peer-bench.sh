#!/usr/bin/env bash
# Compares `h3lab load` with shb, oha and h2load against one `h3lab serve`:
# requests/s, requests per client CPU-second and, for a /bytes/N path of
# 1 MB or more, client CPU-seconds per GB, for h1, h2 and h3, each case run REPS times
# interleaved, medians reported. See docs/peer-bench.md.
#
# Settings (environment): REQUESTS=100000 (large enough that start-up CPU,
# ~60 ms for oha, hardly counts) CONNS=10 STREAMS=10 THREADS=2 REPS=3
# URL_PATH=/bytes/1000 RUN_TIMEOUT=90 (seconds per run) OUT=DIR (keep raw output)
# PROTOCOLS="h1 h2 h3" SERVER_THREADS= (the server's --threads; its default if empty)
# NO_BUILD=1 (measure target/release/h3lab as it is), BASELINE=PATH (also
# measure another h3lab binary, e.g. an older build, as the tool "base"),
# LINGER=200us (h1/h2: also run h3lab with --linger LINGER, as "h3lab-l";
# empty: not).
#
# shb runs twice: as it comes ("shb"), and as "shb-b1" with --batch-size 1.
# By default shb holds out for several completions (up to 500 us) before it
# reads them, which saves it wake-ups and segments but counts the wait in
# its latencies; h3lab reads each response as it arrives, as shb-b1 does.
# With --linger h3lab holds out too ("h3lab-l", the like of shb's default),
# and times each read by the kernel's receive stamp (docs/load.md).
set -euo pipefail

REQUESTS=${REQUESTS:-100000}
CONNS=${CONNS:-10}
STREAMS=${STREAMS:-10}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
URL_PATH=${URL_PATH:-/bytes/1000}
RUN_TIMEOUT=${RUN_TIMEOUT:-90}
PROTOCOLS=${PROTOCOLS:-h1 h2 h3}
LINGER=${LINGER-200us}

root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d -t h3lab-peer-bench.XXXXXX)}
mkdir -p "$out"

die() { echo "peer-bench: $*" >&2; exit 1; }

command -v python3 >/dev/null || die "python3 is needed to read the results: apt-get install python3"
command -v timeout >/dev/null || die "timeout (coreutils) is needed: apt-get install coreutils"

h3lab=$root/target/release/h3lab
if [[ ${NO_BUILD:-0} != 1 ]]; then
    echo "building h3lab (release) ..." >&2
    if ! (cd "$root" && timeout 1800 cargo build --release -q -p h3lab); then
        [[ -x $h3lab ]] || die "cargo build --release -p h3lab failed; fix the build and rerun"
        echo "peer-bench: WARNING: the build failed; measuring the existing, possibly stale $h3lab" >&2
    fi
fi
[[ -x $h3lab ]] || die "$h3lab is missing: run cargo build --release -p h3lab"

shb=$(command -v shb || true)
[[ -z $shb && -x $HOME/.cargo/bin/shb ]] && shb=$HOME/.cargo/bin/shb
oha=$(command -v oha || true)
[[ -z $oha && -x $HOME/.cargo/bin/oha ]] && oha=$HOME/.cargo/bin/oha
h2load=$(command -v h2load || true)
tools=(h3lab)
[[ -n $LINGER ]] && tools+=(h3lab-l)
if [[ -n ${BASELINE:-} ]]; then
    [[ -x $BASELINE ]] || die "BASELINE=$BASELINE is not an executable h3lab binary"
    tools+=(base)
fi
if [[ -n $shb ]]; then tools+=(shb shb-b1); else
    echo "shb not found: skipping it; install with: cargo install shb" >&2
fi
if [[ -n $oha ]]; then tools+=(oha); else
    echo "oha not found: skipping it; install with: cargo install oha --features http3" >&2
fi
if [[ -n $h2load ]]; then tools+=(h2load); else
    echo "h2load not found: skipping it; install with: apt-get install nghttp2-client" >&2
fi

server_pid=
cleanup() {
    if [[ -n $server_pid ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free port chosen by the server itself, read from its first line.
server_flags=()
[[ -n ${SERVER_THREADS:-} ]] && server_flags+=(--threads "$SERVER_THREADS")
"$h3lab" serve --listen 127.0.0.1:0 "${server_flags[@]}" >"$out/serve.log" 2>&1 &
server_pid=$!
port=
for _ in $(seq 100); do
    port=$(sed -n 's/^listening: .*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out/serve.log")
    [[ -n $port ]] && break
    kill -0 "$server_pid" 2>/dev/null || die "h3lab serve exited: $(cat "$out/serve.log")"
    sleep 0.1
done
[[ -n $port ]] || die "h3lab serve did not report its port within 10 s"
url=https://127.0.0.1:$port$URL_PATH

# Runs one case; writes RAW (tool output) and CPU ("user sys wall" of the
# client process and its children, from bash's getrusage-based `time`).
run_case() {
    local tool=$1 proto=$2 base=$3 streams=$STREAMS cmd
    [[ $proto == h1 ]] && streams=1
    case $tool in
    h3lab | h3lab-l | base)
        local binary=$h3lab
        [[ $tool == base ]] && binary=$BASELINE
        cmd=("$binary" load "$url" --insecure -q --proto "$proto" -n "$REQUESTS" -c "$CONNS"
        -m "$streams" --threads "$THREADS" --json "$base.json")
        [[ $tool == h3lab-l ]] && cmd+=(--linger "$LINGER") ;;
    shb | shb-b1)
        cmd=("$shb" "$url" -j -n "$REQUESTS" -c "$CONNS" -t "$THREADS")
        [[ $tool == shb-b1 ]] && cmd+=(--batch-size 1)
        [[ $proto == h2 ]] && cmd+=(--http2 -p "$streams")
        [[ $proto == h3 ]] && cmd+=(--http3 -p "$streams") ;;
    oha)
        local version=${proto#h}
        [[ $version == 1 ]] && version=1.1
        cmd=("$oha" "$url" --insecure --no-tui --output-format json -n "$REQUESTS" -c "$CONNS"
            -p "$streams" --http-version "$version" --worker-threads "$THREADS") ;;
    h2load)
        cmd=("$h2load" "$url" -n "$REQUESTS" -c "$CONNS" -m "$streams" -t "$THREADS")
        [[ $proto == h1 ]] && cmd+=(--h1) ;;
    esac
    local TIMEFORMAT='%3U %3S %3R'
    { time timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$base.out" 2>"$base.err" ; } 2>"$base.cpu" ||
        echo "  $tool $proto: exit status $? (see $base.err)" >&2
}

cases=()
for proto in $PROTOCOLS; do
    [[ $proto =~ ^h[123]$ ]] || die "PROTOCOLS=$PROTOCOLS: each must be h1, h2 or h3"
    for tool in "${tools[@]}"; do
        [[ $tool == h2load && $proto == h3 ]] && continue
        # The linger is the TCP engine's; h3 reads each datagram as it comes.
        [[ $tool == h3lab-l && $proto == h3 ]] && continue
        cases+=("$tool:$proto")
    done
done
echo "target $url; $REQUESTS requests, $CONNS connections, $STREAMS streams (h2/h3), $THREADS threads, $REPS rounds; raw output in $out" >&2
for rep in $(seq "$REPS"); do
    for case in "${cases[@]}"; do
        tool=${case%%:*} proto=${case#*:}
        echo "round $rep/$REPS: $tool $proto" >&2
        run_case "$tool" "$proto" "$out/$tool-$proto-$rep"
    done
done

python3 - "$out" "$REPS" "$REQUESTS" "$URL_PATH" "${cases[@]}" <<'EOF'
import json, re, statistics, sys

out, reps, requested, path, cases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:]
# CPU per GB is the figure for downloads (a body of 1 MB or more); for
# small bodies it only restates requests per CPU-second.
sized = re.fullmatch(r"/bytes/(\d+)", path)
body = int(sized.group(1)) if sized and int(sized.group(1)) >= 1_000_000 else None

def parse(tool, base):
    """(responses with status < 400, duration in s as the tool measured it)"""
    if tool in ("h3lab", "h3lab-l", "base"):
        report = json.load(open(base + ".json"))
        good = sum(n for code, n in report["status_counts"].items() if int(code) < 400)
        return good, report["duration_s"]
    text = open(base + ".out").read()
    if tool in ("shb", "shb-b1"):
        report = json.loads(text)
        good = sum(n for code, n in report["statusCodes"].items() if int(code) < 400)
        return good, report["durationSeconds"]
    if tool == "oha":
        report = json.loads(text)
        good = sum(n for code, n in report["statusCodeDistribution"].items() if int(code) < 400)
        return good, report["summary"]["total"]
    finished = re.search(r"finished in ([\d.]+)(ms|s),", text)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx", text)
    seconds = float(finished.group(1)) / (1000 if finished.group(2) == "ms" else 1)
    return int(codes.group(1)) + int(codes.group(2)), seconds

rows = {}
for case in cases:
    tool, proto = case.split(":")
    rates, per_cpu, per_gb, notes = [], [], [], []
    for rep in range(1, reps + 1):
        base = f"{out}/{tool}-{proto}-{rep}"
        try:
            good, seconds = parse(tool, base)
            user, sys_, _wall = map(float, open(base + ".cpu").read().split()[-3:])
        except (OSError, ValueError, KeyError, AttributeError, json.JSONDecodeError) as err:
            notes.append(f"round {rep} unreadable ({type(err).__name__}; see {base}.err)")
            continue
        if good != requested:
            notes.append(f"round {rep}: {requested - good} of {requested} failed")
            continue
        rates.append(good / seconds)
        per_cpu.append(good / (user + sys_))
        if body:
            per_gb.append((user + sys_) / (good * body / 1e9))
    rows[(tool, proto)] = (rates, per_cpu, per_gb, notes)

def fmt(values):
    if not values:
        return "-"
    if statistics.median(values) < 1000:  # downloads: a few requests a second
        spread = f" ({min(values):.2f}-{max(values):.2f})" if len(values) > 1 else ""
        return f"{statistics.median(values):.2f}{spread}"
    spread = f" ({min(values)/1000:.0f}-{max(values)/1000:.0f}k)" if len(values) > 1 else ""
    return f"{statistics.median(values)/1000:.1f}k{spread}"

def fmt_gb(values):
    if not values:
        return "-"
    spread = f" ({min(values):.2f}-{max(values):.2f})" if len(values) > 1 else ""
    return f"{statistics.median(values):.2f}{spread}"

gb_header = f"{'CPU-s/GB median (range)':>26}" if body else ""
print(f"{'proto':<6}{'tool':<8}{'req/s median (range)':>24}{'req/CPU-s median (range)':>28}{gb_header}")
for (tool, proto), (rates, per_cpu, per_gb, notes) in rows.items():
    gb = f"{fmt_gb(per_gb):>26}" if body else ""
    print(f"{proto:<6}{tool:<8}{fmt(rates):>24}{fmt(per_cpu):>28}{gb}  {'; '.join(notes)}")

print("\nratios of medians (h3lab / peer): req/s, req/CPU-s" + (", CPU-s/GB" if body else ""))
for proto in ("h1", "h2", "h3"):
    for mine in ("h3lab", "h3lab-l"):
        ours = rows.get((mine, proto))
        for peer in ("base", "shb", "shb-b1", "oha", "h2load"):
            theirs = rows.get((peer, proto))
            if not ours or not theirs or not all((ours[0], ours[1], theirs[0], theirs[1])):
                continue
            ratio = lambda i: statistics.median(ours[i]) / statistics.median(theirs[i])
            gb = f", {ratio(2):.2f}x CPU-s/GB" if body and ours[2] and theirs[2] else ""
            print(f"  {proto} {mine}/{peer}: {ratio(0):.2f}x req/s, {ratio(1):.2f}x req/CPU-s{gb}")
EOF
