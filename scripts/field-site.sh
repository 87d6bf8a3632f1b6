#!/usr/bin/env bash
# A stand-in for a deployed site, for trying field mode on a machine that
# reaches no server outside itself: a network namespace reached from this
# machine's network through a veth pair, serving a generated site under
# real-looking host names with servers h3lab does not start, and a test
# certificate authority to trust as the system's (SSL_CERT_FILE).
#   www.field.test  198.51.110.2:443  Caddy (h1, h2, h3)
#   old.field.test  198.51.110.3:443  nginx (h1, h2)
# Usage (as root):
#   scripts/field-site.sh up DIR     start it; DIR gets ca.pem, the site, the logs
#   scripts/field-site.sh down DIR   stop it and remove the namespace
# Then, for example:
#   SSL_CERT_FILE=DIR/ca.pem h3lab bench --url https://www.field.test/ \
#     --resolve www.field.test:443:198.51.110.2
# The same site as crates/h3lab/tests/field.rs builds for its tests.
set -euo pipefail

die() { echo "field-site: $*" >&2; exit 1; }
[[ $# -eq 2 ]] || die "usage: $0 up|down DIR"
action=$1 dir=$2
ns=h3lab-field-site
device=h3lab-fs0
here=$(cd "$(dirname "$0")" && pwd)

down() {
  for pid in "$dir"/*.pid; do
    [[ -e $pid ]] && kill "$(cat "$pid")" 2>/dev/null || true
  done
  ip netns delete "$ns" 2>/dev/null || true
  ip link delete "$device" 2>/dev/null || true
}

case $action in
  down) down; exit 0 ;;
  up) ;;
  *) die "unknown action '$action': up or down" ;;
esac

[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces)"
caddy=${H3LAB_CADDY:-$(command -v caddy || echo "$(go env GOPATH 2>/dev/null)/bin/caddy")}
nginx=${H3LAB_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
h3lab=${H3LAB:-$here/../target/release/h3lab}
[[ -x $caddy ]] || die "caddy is not installed: go install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9"
[[ -x $nginx ]] || die "nginx is not installed: apt-get install nginx"
[[ -x $h3lab ]] || die "h3lab is not built at $h3lab: cargo build --release (or set H3LAB)"
command -v openssl >/dev/null || die "openssl is not installed: apt-get install openssl"

if [[ $(ip -4 -o addr show) == *"inet 198.51.110."* ]]; then
  die "198.51.110.0/24 is already in use here (by this machine, or a site left up: $0 down DIR)"
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
chmod 755 "$dir"
down

# The test authority and one leaf for both names.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
  -subj "/CN=h3lab field test CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=www.field.test" \
  -keyout "$dir/leaf.key" -out "$dir/leaf.csr" 2>/dev/null
printf 'subjectAltName=DNS:www.field.test,DNS:old.field.test\nbasicConstraints=critical,CA:FALSE\n' > "$dir/leaf.ext"
openssl x509 -req -in "$dir/leaf.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
  -days 30 -extfile "$dir/leaf.ext" -out "$dir/leaf.pem" 2>/dev/null
chmod 644 "$dir/leaf.key"

rm -rf "$dir/site"
"$h3lab" site gen small --out "$dir/site" >/dev/null

ip netns add "$ns"
ip link add "$device" type veth peer name eth0 netns "$ns"
ip addr add 198.51.110.1/24 dev "$device"
ip link set "$device" up
ip -n "$ns" addr add 198.51.110.2/24 dev eth0
ip -n "$ns" addr add 198.51.110.3/24 dev eth0
ip -n "$ns" link set eth0 up
ip -n "$ns" link set lo up
ip -n "$ns" route add default via 198.51.110.1

cat > "$dir/Caddyfile" <<CADDY
{
	admin off
	persist_config off
	auto_https off
	servers {
		protocols h1 h2 h3
	}
}
https://www.field.test:443 {
	bind 198.51.110.2
	tls $dir/leaf.pem $dir/leaf.key
	root * $dir/site
	file_server
}
CADDY
cat > "$dir/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $dir/nginx-master.pid;
error_log $dir/nginx.log;
events {}
http {
  access_log off;
  client_body_temp_path $dir/body;
  include /etc/nginx/mime.types;
  server {
    listen 198.51.110.3:443 ssl http2;
    server_name old.field.test;
    ssl_certificate $dir/leaf.pem;
    ssl_certificate_key $dir/leaf.key;
    root $dir/site;
  }
}
NGINX
XDG_DATA_HOME=$dir XDG_CONFIG_HOME=$dir ip netns exec "$ns" "$caddy" run --adapter caddyfile \
  --config "$dir/Caddyfile" > "$dir/caddy.log" 2>&1 &
echo $! > "$dir/caddy.pid"
ip netns exec "$ns" "$nginx" -c "$dir/nginx.conf" > "$dir/nginx.out" 2>&1 &
echo $! > "$dir/nginx.pid"
echo "field site up: www.field.test 198.51.110.2 (Caddy), old.field.test 198.51.110.3 (nginx)"
echo "trust it with SSL_CERT_FILE=$dir/ca.pem; stop it with $0 down $dir"
