#!/usr/bin/env bash
# Starts a peer server for `h3lab bench`'s `servers` preset, in the
# foreground, serving /bytes/1000 and /bytes/10000000 over TLS 1.3 on
# IP:PORT: `caddy` (h1, h2 and h3, quic-go) or `nginx` (h1 and h2; h3 only
# where the build has http_v3_module, which Debian 12's 1.22 lacks).
# Usage: scripts/peer-server.sh caddy|nginx IP PORT
#
# Bodies and a self-signed certificate are made once under
# ${TMPDIR:-/tmp}/h3lab-peer-server and reused. Settings are each server's
# defaults (nginx: Debian's sendfile, tcp_nopush, 16 KB ssl_buffer_size).
set -euo pipefail

die() { echo "peer-server: $*" >&2; exit 127; }
[[ $# -eq 3 ]] || die "usage: $0 caddy|nginx IP PORT"
name=$1 ip=$2 port=$3

case $name in
  caddy)
    caddy=$(command -v caddy || true)
    [[ -n $caddy ]] || { [[ -x $(go env GOPATH 2>/dev/null)/bin/caddy ]] && caddy=$(go env GOPATH)/bin/caddy; } || true
    [[ -n $caddy ]] || die "caddy is not installed: go install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9"
    ;;
  nginx)
    nginx=$(command -v nginx || echo /usr/sbin/nginx)
    [[ -x $nginx ]] || die "nginx is not installed: apt-get install nginx"
    ;;
  *) die "unknown server '$name': caddy or nginx" ;;
esac

dir=${TMPDIR:-/tmp}/h3lab-peer-server
mkdir -p "$dir/www/bytes"
for size in 1000 10000000; do
  [[ -s $dir/www/bytes/$size ]] || head -c "$size" /dev/urandom > "$dir/www/bytes/$size"
done
# One certificate per address, naming it, so a client that sends no SNI
# (an IP address) still gets it from Caddy.
cert=$dir/cert-$ip.pem key=$dir/key-$ip.pem
if [[ ! -s $key ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj /CN=h3lab -addext "subjectAltName=IP:$ip" -keyout "$key" -out "$cert" 2>/dev/null \
    || die "openssl could not make a certificate: apt-get install openssl"
fi
# nginx's workers run as nobody when started as root.
chmod -R a+rX "$dir"
run=$dir/$name-$ip-$port
mkdir -p "$run"

case $name in
  caddy)
    cat > "$run/Caddyfile" <<CADDY
{
	admin off
	persist_config off
	auto_https off
	servers {
		protocols h1 h2 h3
	}
}
https://$ip:$port {
	tls $cert $key
	root * $dir/www
	file_server
}
CADDY
    XDG_DATA_HOME=$run XDG_CONFIG_HOME=$run exec "$caddy" run --adapter caddyfile --config "$run/Caddyfile"
    ;;
  nginx)
    h3=""
    if "$nginx" -V 2>&1 | grep -q http_v3_module; then
      h3="listen $ip:$port quic reuseport; add_header Alt-Svc 'h3=\":$port\"';"
    fi
    cat > "$run/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $run/nginx.pid;
error_log stderr;
events {}
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  client_body_temp_path $run/body;
  default_type application/octet-stream;
  server {
    listen $ip:$port ssl http2;
    $h3
    ssl_protocols TLSv1.3;
    ssl_certificate $cert;
    ssl_certificate_key $key;
    root $dir/www;
  }
}
NGINX
    exec "$nginx" -c "$run/nginx.conf"
    ;;
esac
