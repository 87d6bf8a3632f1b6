#!/usr/bin/env bash
# `h3lab probe conformance` against each server of the `servers` preset that
# is installed here, one after the other on loopback, and one table of the
# results: cases as rows, servers as columns (markdown, on stdout; each
# server's report in OUT/<server>.json and its lines in OUT/<server>.txt).
#
#   scripts/conformance-peers.sh                      # every installed server
#   SERVERS="builtin caddy" scripts/conformance-peers.sh
#
# Settings: SERVERS (default: builtin caddy nginx-h3 ngtcp2 bun hypercorn
# peregrine picoquic kwik xnet quiche tquic; one not installed is left out
# with the command that installs it), OUT (default: conformance-peers),
# H3LAB (default: target/release/h3lab, else target/debug/h3lab, whichever
# has the h3lab-conformance helper built beside it, docs/conformance.md).
# Until the `conformance` preset exists, this is how the table is made.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "conformance-peers: $*" >&2; exit 1; }

h3lab=${H3LAB:-}
if [[ -z $h3lab ]]; then
  for candidate in "$root/target/release/h3lab" "$root/target/debug/h3lab"; do
    [[ -x $candidate && -x ${candidate%/h3lab}/h3lab-conformance ]] && { h3lab=$candidate; break; }
  done
fi
[[ -n $h3lab && -x $h3lab ]] || die "no h3lab with its helper beside it: cargo build --release, and \
cargo build --release --manifest-path crates/conformance/Cargo.toml --target-dir target (or set H3LAB)"
servers=${SERVERS:-"builtin caddy nginx-h3 ngtcp2 bun hypercorn peregrine picoquic kwik xnet quiche tquic"}
out=${OUT:-conformance-peers}
mkdir -p "$out"
work=$(mktemp -d)
server_pid=
cleanup() {
  [[ -z $server_pid ]] || kill -- -"$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
mkdir -p "$work/site"
head -c 1000 /dev/zero | tr '\0' 'x' > "$work/site/index.html"

port=24430
ran=()
for server in $servers; do
  port=$((port + 1))
  if [[ $server == builtin ]]; then
    command=("$h3lab" serve --listen "127.0.0.1:$port" --cert "$work/cert.pem" --key "$work/key.pem" --site "$work/site")
  else
    command=("$root/scripts/peer-server.sh" "$server" 127.0.0.1 "$port" "$work/site" "$work/cert.pem" "$work/key.pem")
  fi
  setsid "${command[@]}" > "$work/$server.log" 2>&1 &
  server_pid=$!
  url="https://localhost:$port/index.html"
  status=3
  rm -f "$out/$server.json"
  # A server takes a moment to listen; the probe's first check says when.
  for _ in 1 2 3 4 5 6; do
    sleep 1
    kill -0 "$server_pid" 2>/dev/null || break
    status=0
    "$h3lab" probe conformance "$url" --resolve "localhost:$port:127.0.0.1" \
      --json "$out/$server.json" > "$out/$server.txt" 2> "$work/probe.err" || status=$?
    grep -q "does not answer a plain GET over HTTP/3" "$work/probe.err" || break
  done
  kill -- -"$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
  if [[ $status -ne 3 && -s $out/$server.json ]]; then
    echo "$server: $(grep -m 1 ' cases, ' "$out/$server.txt")" >&2
    ran+=("$server")
  else
    rm -f "$out/$server.json" "$out/$server.txt"
    echo "$server: left out: $(tail -n 1 "$work/$server.log")" >&2
  fi
done
[[ ${#ran[@]} -gt 0 ]] || die "no server ran"

python3 - "$out" "${ran[@]}" <<'PY'
import json, sys
out, servers = sys.argv[1], sys.argv[2:]
reports = {s: json.load(open(f"{out}/{s}.json")) for s in servers}
def cell(case):
    if case is None:
        return "-"
    observed = case["observed"]
    kind = observed["kind"]
    what = {
        "connection_closed": lambda: observed["error"]["name"],
        "stream_reset": lambda: "reset " + observed["error"]["name"],
        "answered": lambda: f"answered {observed['status']}",
    }.get(kind, lambda: kind.replace("_", " "))()
    mark = {"pass": "pass", "fail": "**FAIL**", "unknown": "?"}[case["verdict"]]
    return mark if case["verdict"] == "pass" else f"{mark}: {what}"
ids = [c["id"] for c in reports[servers[0]]["cases"]]
print("| case | " + " | ".join(servers) + " |")
print("| --- |" + " --- |" * len(servers))
for id_ in ids:
    row = [cell(next((c for c in reports[s]["cases"] if c["id"] == id_), None)) for s in servers]
    print(f"| `{id_}` | " + " | ".join(row) + " |")
fails = [sum(c["verdict"] == "fail" for c in reports[s]["cases"]) for s in servers]
print("| **failed** | " + " | ".join(str(n) for n in fails) + " |")
PY
