#!/usr/bin/env bash
# Starts a peer server in the foreground for `h3lab bench` (the `servers`
# and `study-c` presets), serving ROOT at / over TLS 1.3 on IP:PORT with
# CERT and KEY, every response `Cache-Control: no-store` where the server
# can set it:
#   caddy   h1, h2 and h3 (Go's TLS and HTTP/2, quic-go)
#   nginx   h1 and h2 (OpenSSL; h3 only where the build has
#           http_v3_module, which Debian 12's 1.22 lacks)
#   nginx-h3  h1, h2 and h3: Debian 13's nginx 1.26 (http_v3_module, its
#           own QUIC on OpenSSL 3.5), from scripts/trixie-servers.sh
#   ngtcp2  h3 only: Debian's gtlsserver (ngtcp2, nghttp3, GnuTLS)
#   quiche  h3 only: scripts/quiche-server (Cloudflare's quiche)
# and, from scripts/peer-setup.sh (under H3LAB_PEERS_DIR, /opt/h3lab-ci/peers):
#   bun        h1 and h3: Bun.serve (lsquic; Bun's TCP side has no h2)
#   hypercorn  h1, h2 and h3: hypercorn with aioquic for h3
#   peregrine  h1, h2 and h3: Peregrine (its own QUIC, in Swift)
#   picoquic   h3 only: picoquic's h3zero, through aiopquic; binds every
#              address on PORT (aiopquic takes no address)
#   kwik       h3 only: kwik and flupke (Java), scripts/peers/KwikServer.java,
#              with scripts/peers/kwik-send-request-race.patch's one fix
#   tquic      h3 only: tquic_server (Tencent's tquic)
#   xnet       h1, h2 and h3: scripts/peers/xnet-h3-server, net/http for
#              h1 and h2, x/net's internal HTTP/3 on Go's own QUIC
#              (golang.org/x/net/quic) for h3
# Usage: scripts/peer-server.sh NAME IP PORT ROOT CERT KEY
# In a suite: "scripts/peer-server.sh caddy {ip} {port} {site} {cert} {key}".
#
# Settings are each server's defaults (nginx: Debian's sendfile,
# tcp_nopush, 16 KB ssl_buffer_size), so each row shows the server as
# people deploy it. Its own files go to ${TMPDIR:-/tmp}/h3lab-peer-server.
# H3LAB_PEER_CONNECTIONS (set by `h3lab probe connections`) raises nginx's
# worker_connections, 512 by default, to the connections a probe holds.
set -euo pipefail

die() { echo "peer-server: $*" >&2; exit 127; }
names="caddy, nginx, nginx-h3, ngtcp2, quiche, bun, hypercorn, peregrine, picoquic, kwik, tquic or xnet"
[[ $# -eq 6 ]] || die "usage: $0 NAME IP PORT ROOT CERT KEY, where NAME is $names"
name=$1 ip=$2 port=$3 root=$4 cert=$5 key=$6
here=$(cd "$(dirname "$0")" && pwd)

[[ -d $root ]] || die "no directory to serve at $root"
for file in "$cert" "$key"; do
  [[ -r $file ]] || die "cannot read $file"
done

# H3LAB_CADDY, H3LAB_NGINX, H3LAB_NGINX_H3 and H3LAB_GTLSSERVER name a
# binary elsewhere, as for the tests.
case $name in
  caddy)
    caddy=${H3LAB_CADDY:-$(command -v caddy || true)}
    [[ -n $caddy ]] || { [[ -x $(go env GOPATH 2>/dev/null)/bin/caddy ]] && caddy=$(go env GOPATH)/bin/caddy; } || true
    [[ -n $caddy ]] || die "caddy is not installed: go install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9"
    ;;
  nginx)
    nginx=${H3LAB_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
    [[ -x $nginx ]] || die "nginx is not installed: apt-get install nginx"
    ;;
  nginx-h3)
    nginx=${H3LAB_NGINX_H3:-/opt/h3lab-ci/trixie/bin/nginx}
    [[ -x $nginx ]] || die "nginx with HTTP/3 is not installed at $nginx: run scripts/trixie-servers.sh nginx"
    [[ $("$nginx" -V 2>&1) == *http_v3_module* ]] || die "$nginx is built without http_v3_module: run scripts/trixie-servers.sh nginx"
    ;;
  ngtcp2)
    gtlsserver=${H3LAB_GTLSSERVER:-$(command -v gtlsserver || echo /usr/sbin/gtlsserver)}
    [[ -x $gtlsserver ]] || die "ngtcp2's server is not installed: apt-get install ngtcp2-server"
    ;;
  quiche)
    quiche=$here/quiche-server/target/release/quiche-server
    [[ -x $quiche ]] || die "the quiche server is not built: cargo build --release --manifest-path scripts/quiche-server/Cargo.toml (needs cmake and libclang-dev)"
    ;;
  bun|hypercorn|peregrine|picoquic|kwik|tquic|xnet)
    peers=${H3LAB_PEERS_DIR:-/opt/h3lab-ci/peers}
    [[ -f $peers/.$name.stamp ]] || die "$name is not installed in $peers: run scripts/peer-setup.sh $name"
    ;;
  *) die "unknown server '$name': $names" ;;
esac

run=${TMPDIR:-/tmp}/h3lab-peer-server/$name-$ip-$port
mkdir -p "$run"
# nginx's workers run as nobody when started as root.
chmod a+rx "$run" "$(dirname "$run")"

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
# Any host name on $ip: a suite may name the server (a profile's dns,
# www.site.test) or reach it by its address.
https://:$port {
	bind $ip
	tls $cert $key
	root * $root
	header Cache-Control no-store
	file_server
}
CADDY
    XDG_DATA_HOME=$run XDG_CONFIG_HOME=$run exec "$caddy" run --adapter caddyfile --config "$run/Caddyfile"
    ;;
  nginx|nginx-h3)
    # HTTP/3 adds only what it needs: a QUIC listener on the same port,
    # http3 on, and Alt-Svc on every answer. The rest stays nginx's
    # default: ssl_early_data off (no 0-RTT), quic_gso off, quic_retry off,
    # quic_bpf off, http3_stream_buffer_size 64k, http3_max_concurrent_streams 128.
    h3=""
    if [[ $name == nginx-h3 || $("$nginx" -V 2>&1) == *http_v3_module* ]]; then
      h3="listen $ip:$port quic reuseport;
    http3 on;
    add_header Alt-Svc 'h3=\":$port\"; ma=86400' always;"
    fi
    # Debian 13's nginx (scripts/trixie-servers.sh) brings its own
    # mime.types, at DIR/etc/nginx next to its DIR/bin/nginx.
    mime_types=/etc/nginx/mime.types
    trixie_mime_types=$(dirname "$nginx")/../etc/nginx/mime.types
    [[ -r $trixie_mime_types ]] && mime_types=$trixie_mime_types
    # nginx 1.25.1 and later warn at `listen ... http2`: http2 has a
    # directive of its own there.
    listen="listen $ip:$port ssl http2;"
    [[ $name == nginx-h3 ]] && listen="listen $ip:$port ssl;
    http2 on;"
    cat > "$run/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $run/nginx.pid;
error_log stderr;
events { ${H3LAB_PEER_CONNECTIONS:+worker_connections $H3LAB_PEER_CONNECTIONS;} }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  client_body_temp_path $run/body;
  proxy_temp_path $run/proxy;
  fastcgi_temp_path $run/fastcgi;
  uwsgi_temp_path $run/uwsgi;
  scgi_temp_path $run/scgi;
  include $mime_types;
  default_type application/octet-stream;
  server {
    $listen
    $h3
    ssl_protocols TLSv1.3;
    ssl_certificate $cert;
    ssl_certificate_key $key;
    add_header Cache-Control no-store always;
    root $root;
  }
}
NGINX
    exec "$nginx" -c "$run/nginx.conf"
    ;;
  ngtcp2)
    # gtlsserver answers with no Cache-Control header (it has no setting
    # for it); the bench's loads are cold, with no cache to consult.
    exec "$gtlsserver" --quiet --htdocs="$root" "$ip" "$port" "$key" "$cert"
    ;;
  quiche)
    exec "$quiche" "$ip" "$port" "$cert" "$key" "$root"
    ;;
  bun)
    exec "$peers/bun/package/bin/bun" "$here/peers/bun-server.js" "$ip" "$port" "$root" "$cert" "$key"
    ;;
  hypercorn)
    # Hypercorn's defaults otherwise (one worker, asyncio, h11/h2 on TCP).
    H3LAB_ROOT=$root exec "$peers/hypercorn/bin/hypercorn" --certfile "$cert" --keyfile "$key" \
      --bind "$ip:$port" --quic-bind "$ip:$port" "$here/peers/hypercorn_app.py:app"
    ;;
  peregrine)
    cd "$here/peers"
    H3LAB_ROOT=$root exec "$peers/peregrine/bin/peregrine" --host "$ip" --port "$port" --tls-cert "$cert" --tls-key "$key" \
      --http3 --static-dir "/=$root" peregrine_app:app
    ;;
  picoquic)
    exec "$peers/picoquic/bin/python" "$here/peers/picoquic-server.py" "$port" "$root" "$cert" "$key"
    ;;
  kwik)
    # No hsperfdata directory in /tmp: the JVM's performance counters are
    # for jstat, and a directory left there fails CI's clean-up check.
    # kwik's fixed class (scripts/peers/kwik-send-request-race.patch) goes
    # ahead of its jar; H3LAB_KWIK_AS_RELEASED=1 runs the jar as released.
    fixed="$peers/kwik/patched:"
    [[ ${H3LAB_KWIK_AS_RELEASED:-0} == 1 ]] && fixed=
    exec java -XX:-UsePerfData -cp "$fixed$peers/kwik/lib/*:$peers/kwik/classes" KwikServer "$ip" "$port" "$root" "$cert" "$key"
    ;;
  tquic)
    # tquic_server logs every connection at its default level (INFO).
    exec "$peers/tquic/bin/tquic_server" -l "$ip:$port" -c "$cert" -k "$key" -r "$root" --log-level WARN
    ;;
  xnet)
    exec "$peers/xnet/xnet-h3-server" "$ip" "$port" "$root" "$cert" "$key"
    ;;
esac
