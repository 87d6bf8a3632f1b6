#!/usr/bin/env bash
# Do the two page loaders agree? Loads every site shape over h1, h2 and h3
# with the built-in loader and with headless Chromium through one clean
# emulated path, and prints the median page-load times side by side with
# their ratio (docs/page-loads.md keeps the table this printed).
#
#   scripts/page-agreement.sh            # 5 cold loads per cell, RTT 40 ms, 100 Mbit/s
#   LOADS=10 RTT=110ms RATE=200mbit SHAPES="small cms" PROTOS="h2 h3" scripts/page-agreement.sh
#
# Needs root (network namespaces) and Chromium; NO_BUILD=1 skips the build,
# EXE=PATH runs another h3lab binary, KEEP=DIR keeps the JSON reports there.
set -euo pipefail
cd "$(dirname "$0")/.."

LOADS=${LOADS:-5}
RTT=${RTT:-40ms}
RATE=${RATE:-100mbit}
SHAPES=${SHAPES:-small content spa cms}
PROTOS=${PROTOS:-h1 h2 h3}
PORT=8443

[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet
exe=${EXE:-$PWD/target/release/h3lab}
work=${KEEP:-$(mktemp -d)}
[ -n "${KEEP:-}" ] && mkdir -p "$work" || trap 'rm -rf "$work"' EXIT

printf '| shape | proto | built-in median (ms) | Chromium median (ms) | Chromium / built-in |\n'
printf '| --- | --- | ---: | ---: | ---: |\n'
for shape in $SHAPES; do
  site=$work/site-$shape
  "$exe" site gen "$shape" --out "$site" >/dev/null
  for proto in $PROTOS; do
    for browser in builtin chromium; do
      banner=$work/banner; rm -f "$banner"
      "$exe" net run --rtt "$RTT" --down "$RATE" --up "$RATE" \
        --server-cmd "exec $exe serve --listen \$H3LAB_SERVER_IP:$PORT --san \$H3LAB_SERVER_IP --site $site --write-cert $work/cert.pem > $banner" \
        -- sh -c "until grep -q '^listening' $banner 2>/dev/null; do sleep 0.05; done
                  $exe page https://\$H3LAB_SERVER_IP:$PORT/ --proto $proto --browser $browser \
                  -n $LOADS --ca $work/cert.pem -q --json $work/$shape-$proto-$browser.json" >/dev/null 2>>"$work/log"
    done
    python3 - "$work" "$shape" "$proto" <<'EOF'
import json, statistics, sys
work, shape, proto = sys.argv[1:]
median = lambda b: statistics.median(l["load_ms"] for l in json.load(open(f"{work}/{shape}-{proto}-{b}.json"))["loads"])
builtin, chromium = median("builtin"), median("chromium")
print(f"| {shape} | {proto} | {builtin:.0f} | {chromium:.0f} | {chromium / builtin:.2f} |")
EOF
  done
done
