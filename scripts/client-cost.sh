#!/usr/bin/env bash
# What a client pays to download one large body over h2 and over h3 on an
# emulated path: CPU-seconds per GB and sleeps (voluntary context
# switches) per MB of the client process, for `h3lab load` and for peer
# clients, each against one `h3lab serve`. Each case runs REPS times,
# interleaved; medians and each h3 client's ratio to h2 are printed.
# See docs/performance.md ("Sixth round").
#
# Settings (environment): SIZE=300000000 (bytes) PROFILE=fast-1g REPS=3
# CLIENTS="h3lab oha quic-go quiche" OUT=DIR (keep raw output) NO_BUILD=1
# (measure target/release/h3lab as it is). The peers: oha (the same quinn
# and h3 crates as h3lab), scripts/quic-go-client (quic-go for h3, Go's
# net/http for h2; needs Go) and scripts/quiche-client (quiche, h3 only, one
# thread without an async runtime; needs cmake for BoringSSL). Needs root
# (network namespaces) and GNU time.
set -euo pipefail

SIZE=${SIZE:-300000000}
PROFILE=${PROFILE:-fast-1g}
REPS=${REPS:-3}
CLIENTS=${CLIENTS:-h3lab oha quic-go quiche}

root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$(mktemp -d -t h3lab-client-cost.XXXXXX)}
mkdir -p "$out"

die() { echo "client-cost: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "needs root for the emulated path's namespaces: run it with sudo"
[[ -x /usr/bin/time ]] || die "GNU time is needed for the client's CPU and sleeps: apt-get install time"
command -v python3 >/dev/null || die "python3 is needed to read the results: apt-get install python3"

h3lab=$root/target/release/h3lab
if [[ ${NO_BUILD:-0} != 1 ]]; then
    echo "building h3lab (release) ..." >&2
    (cd "$root" && cargo build --release -q -p h3lab) || die "cargo build --release -p h3lab failed"
fi
[[ -x $h3lab ]] || die "$h3lab is missing: run cargo build --release -p h3lab"

for client in $CLIENTS; do
    case $client in
        h3lab) ;;
        oha) command -v oha >/dev/null || die "oha is missing: cargo install oha --features http3 (or drop it from CLIENTS)" ;;
        quic-go)
            command -v go >/dev/null || die "Go is needed to build scripts/quic-go-client (or drop quic-go from CLIENTS)"
            (cd "$root/scripts/quic-go-client" && go build -o "$out/quic-go-client" .) \
                || die "building scripts/quic-go-client failed (it needs the Go module proxy once)"
            ;;
        quiche)
            command -v cmake >/dev/null || die "cmake is needed to build quiche's BoringSSL: apt-get install cmake (or drop quiche from CLIENTS)"
            echo "building scripts/quiche-client (release) ..." >&2
            cargo build --release -q --manifest-path "$root/scripts/quiche-client/Cargo.toml" \
                || die "building scripts/quiche-client failed"
            ;;
        *) die "unknown client '$client' in CLIENTS: use h3lab, oha, quic-go or quiche" ;;
    esac
done

# The client command for CLIENT and PROTO, downloading $url (set inside
# the client namespace, where H3LAB_SERVER_IP is known).
client_command() {
    local client=$1 proto=$2
    case $client in
        h3lab) echo "$h3lab load \$url --insecure --proto $proto -n 1 -c 1 -q --json -" ;;
        oha) echo "oha --no-tui --output-format json -n 1 -c 1 --insecure --http-version ${proto#h} \$url" ;;
        quic-go) echo "$out/quic-go-client $proto \$url" ;;
        quiche) echo "$root/scripts/quiche-client/target/release/quiche-client \$url" ;;
    esac
}

# One download; appends "client proto cpu_s sleeps bytes_ok" to $out/runs.
run_one() {
    local client=$1 proto=$2 tag=$1-$2-$3
    rm -f "$out/$tag.pem"
    cat > "$out/$tag.sh" <<EOS
for _ in \$(seq 100); do [[ -s $out/$tag.pem ]] && break; sleep 0.1; done
url=https://\$H3LAB_SERVER_IP:443/bytes/$SIZE
/usr/bin/time -f "%U %S %w" -o $out/$tag.time $(client_command "$client" "$proto") > $out/$tag.out 2> $out/$tag.err
EOS
    "$h3lab" net run --profile "$PROFILE" \
        --server-cmd "exec $h3lab serve --listen \$H3LAB_SERVER_IP:443 --write-cert $out/$tag.pem > $out/$tag.serve.log 2>&1" \
        -- bash "$out/$tag.sh" > "$out/$tag.net.log" 2>&1 || true
    python3 - "$out/$tag" "$client" "$proto" "$SIZE" >> "$out/runs" <<'PY'
import json, sys
tag, client, proto, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
try:
    user, sys_s, sleeps = open(tag + ".time").read().split()[-3:]
    text = open(tag + ".out").read()
    # What each client says it received: h3lab's and oha's JSON reports,
    # the Go and quiche clients' "bytes N" line.
    if client == "h3lab":
        received = json.loads(text)["body_bytes"]
    elif client == "oha":
        received = json.loads(text)["summary"]["totalData"]
    else:
        received = int(text.split()[1])
except (OSError, ValueError, KeyError, IndexError):
    print(client, proto, "failed")
    sys.exit()
verdict = "ok" if received == size else f"short:{received}"
print(client, proto, float(user) + float(sys_s), int(sleeps), verdict)
PY
}

: > "$out/runs"
for rep in $(seq "$REPS"); do
    for client in $CLIENTS; do
        protos="h2 h3"
        [[ $client == quiche ]] && protos=h3
        for proto in $protos; do
            echo "round $rep/$REPS: $client $proto" >&2
            run_one "$client" "$proto" "$rep"
        done
    done
done

python3 - "$out/runs" "$SIZE" "$PROFILE" <<'PY'
import statistics, sys
runs, size, profile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
gb, mb = size / 1e9, size / 1e6
cases = {}
failed = []
for line in open(runs):
    f = line.split()
    if f[2] == "failed" or f[4] != "ok":
        failed.append(f"{f[0]} {f[1]}: {f[2] if f[2] == 'failed' else f[4]}")
        continue
    cases.setdefault((f[0], f[1]), []).append((float(f[2]) / gb, int(f[3]) / mb))
print(f"client CPU per GB downloading {size:,} B on {profile} (medians of the runs)")
print(f"{'client':8} {'proto':5} {'runs':>4} {'CPU-s/GB':>9} {'range':>13} {'sleeps/MB':>10}")
medians = {}
for (client, proto), values in sorted(cases.items()):
    cpu = [v[0] for v in values]
    sleeps = [v[1] for v in values]
    medians[(client, proto)] = statistics.median(cpu)
    print(f"{client:8} {proto:5} {len(values):>4} {statistics.median(cpu):>9.2f} "
          f"{min(cpu):>6.2f}-{max(cpu):<6.2f} {statistics.median(sleeps):>10.1f}")
# Each h3 client against its own stack's h2 where it has one, and against
# h3lab's h2 (the study-d baseline) always.
ours = medians.get(("h3lab", "h2"))
for client in sorted({c for c, _ in cases}):
    h3 = medians.get((client, "h3"))
    if h3 is None:
        continue
    own = medians.get((client, "h2"))
    parts = [f"its own h2 {h3 / own:.2f}x"] if own else []
    if ours:
        parts.append(f"h3lab's h2 {h3 / ours:.2f}x")
    print(f"  {client} h3 against " + ", ".join(parts))
for f in failed:
    print(f"  left out (failed or short): {f}")
PY
echo "raw output: $out" >&2
