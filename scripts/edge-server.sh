#!/usr/bin/env bash
# Starts an edge in the foreground: a reverse proxy that speaks h1, h2 and
# h3 to clients on IP:PORT (TLS 1.3, CERT and KEY, h3 on UDP IP:PORT
# advertised by Alt-Svc, any host name accepted) and forwards to an origin
# at https://ORIGIN_IP:ORIGIN_PORT over ORIGIN_PROTO:
#   nginx    Debian 13's nginx 1.26 (http_v3_module), h1 to the origin only
#   haproxy  Debian 13's HAProxy 3.0 (QUIC on the OpenSSL compat layer)
#   caddy    Caddy (Go's TLS and HTTP/2, quic-go)
# Usage: scripts/edge-server.sh nginx|haproxy|caddy IP PORT SITE CERT KEY \
#          ORIGIN_IP ORIGIN_PORT ORIGIN_PROTO FORWARD
#   ORIGIN_PROTO  h1: HTTP/1.1, connections kept alive and reused (nginx
#                 upstream keepalive 32; HAProxy's default http-reuse safe;
#                 Caddy's transport, 32 idle connections per host)
#                 h2: HTTP/2 (HAProxy, Caddy; nginx cannot proxy HTTP to an
#                 h2 upstream, only gRPC: refused, exit 2)
#   FORWARD       all: every request goes to the origin (a dynamic API)
#                 documents: the edge serves SITE itself, as a CDN with the
#                 site cached would, `Cache-Control: no-store` where the
#                 server can set it, and forwards only documents: /, paths
#                 ending in / and paths ending in .html (HAProxy cannot serve
#                 a directory: refused, exit 2)
# A suite's edge command runs it with these ten arguments, in this order.
#
# The origin's certificate is NOT verified (a self-signed lab
# certificate): nginx's default proxy_ssl_verify off, HAProxy `verify
# none`, Caddy `tls_insecure_skip_verify`. The Host (:authority) goes to
# the origin as the client sent it (nginx: its host name, without the
# port). Forwarding headers only where the server adds them by default
# (Caddy: X-Forwarded-For, -Proto, -Host and Via; nginx, HAProxy: none). No
# caching at the edge. Everything else is each server's default, as
# scripts/peer-server.sh keeps it, so each row shows the server as people
# deploy it. Its own files go to ${TMPDIR:-/tmp}/h3lab-edge-server/NAME-IP-PORT.
# Exit 127: bad arguments, or a server not installed (nginx and haproxy:
# scripts/trixie-servers.sh; H3LAB_NGINX_H3, H3LAB_HAPROXY and
# H3LAB_CADDY name a binary elsewhere). Exit 2: a combination the server
# cannot do, or an unknown ORIGIN_PROTO or FORWARD.
set -euo pipefail

die() { echo "edge-server: $*" >&2; exit 127; }
refuse() { echo "edge-server: $*" >&2; exit 2; }
# Sets $nginx, $haproxy or $caddy to the server's binary, or dies naming
# how to install it.
find_server() {
  case $1 in
    nginx)
      nginx=${H3LAB_NGINX_H3:-/opt/h3lab-ci/trixie/bin/nginx}
      [[ -x $nginx ]] || die "nginx with HTTP/3 is not installed at $nginx: run scripts/trixie-servers.sh nginx"
      [[ $("$nginx" -V 2>&1) == *http_v3_module* ]] || die "$nginx is built without http_v3_module: run scripts/trixie-servers.sh nginx"
      ;;
    haproxy)
      haproxy=${H3LAB_HAPROXY:-/opt/h3lab-ci/trixie/bin/haproxy}
      [[ -x $haproxy ]] || die "HAProxy with QUIC is not installed at $haproxy: run scripts/trixie-servers.sh haproxy"
      [[ $("$haproxy" -vv 2>&1) == *+QUIC* ]] || die "$haproxy is built without QUIC: run scripts/trixie-servers.sh haproxy"
      ;;
    caddy)
      caddy=${H3LAB_CADDY:-$(command -v caddy || true)}
      [[ -n $caddy ]] || { [[ -x $(go env GOPATH 2>/dev/null)/bin/caddy ]] && caddy=$(go env GOPATH)/bin/caddy; } || true
      [[ -n $caddy ]] || die "caddy is not installed: go install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9"
      ;;
    *) die "unknown edge server '$1': nginx, haproxy or caddy" ;;
  esac
}

# `--version NAME` prints the server's name and version (nginx/1.26.3),
# which a cell records.
if [[ ${1:-} == --version && $# -eq 2 ]]; then
  find_server "$2"
  case $2 in
    nginx) "$nginx" -v 2>&1 | sed -n 's/^nginx version: //p' ;;
    haproxy) "$haproxy" -v | sed -n '1s/^HAProxy version \([^ ]*\).*/haproxy\/\1/p' ;;
    # A `go install`ed Caddy says `unknown` to `version`; its module's
    # version is in its build information.
    caddy) "$caddy" build-info | awk '$1 == "mod" && $2 == "github.com/caddyserver/caddy/v2" { print "caddy/" $3 }' ;;
  esac
  exit 0
fi
usage="usage: $0 nginx|haproxy|caddy IP PORT SITE CERT KEY ORIGIN_IP ORIGIN_PORT h1|h2 all|documents"
[[ $# -eq 10 ]] || die "$usage"
name=$1 ip=$2 port=$3 site=$4 cert=$5 key=$6 origin_ip=$7 origin_port=$8 origin_proto=$9 forward=${10}

case $name in
  nginx|haproxy|caddy) ;;
  *) die "unknown edge server '$name': nginx, haproxy or caddy" ;;
esac
case $origin_proto in
  h1|h2) ;;
  *) refuse "unknown origin protocol '$origin_proto': h1 or h2" ;;
esac
case $forward in
  all|documents) ;;
  *) refuse "unknown forward '$forward': all (every request to the origin) or documents (the site from the edge, documents from the origin)" ;;
esac
# What a server cannot do, refused at once, before anything else.
if [[ $name == nginx && $origin_proto == h2 ]]; then
  # proxy_pass speaks HTTP/1.0 or 1.1 only; HTTP/2 upstreams are gRPC's
  # (grpc_pass), which is no general reverse proxy.
  refuse 'nginx proxies to its origin over h1 only; use origin_protocol = "h1"'
fi
if [[ $name == haproxy && $forward == documents ]]; then
  # HAProxy 3.0 serves no directory: `http-request return ... file` holds
  # one file in memory, which must fit a buffer (tune.bufsize, 16 kB).
  refuse 'haproxy cannot serve the site itself; use forward = "all"'
fi

for value in "$port" "$origin_port"; do
  [[ $value =~ ^[0-9]{1,5}$ ]] && ((10#$value >= 1 && 10#$value <= 65535)) || die "not a port: '$value'"
done
[[ -n $ip && -n $origin_ip ]] || die "$usage"
if [[ $forward == documents ]]; then
  [[ -d $site ]] || die "no directory to serve at $site"
fi
for file in "$cert" "$key"; do
  [[ -r $file ]] || die "cannot read $file"
done

# host:port, an IPv6 address in brackets.
hostport() { if [[ $1 == *:* ]]; then echo "[$1]:$2"; else echo "$1:$2"; fi; }
listen=$(hostport "$ip" "$port")
origin=$(hostport "$origin_ip" "$origin_port")

find_server "$name"

run=${TMPDIR:-/tmp}/h3lab-edge-server/$name-$ip-$port
mkdir -p "$run"
# nginx's workers run as nobody when started as root.
chmod a+rx "$run" "$(dirname "$run")"

case $name in
  nginx)
    # Debian 13's own mime.types, at DIR/etc/nginx next to DIR/bin/nginx
    # (scripts/trixie-servers.sh).
    mime_types=/etc/nginx/mime.types
    trixie_mime_types=$(dirname "$nginx")/../etc/nginx/mime.types
    [[ -r $trixie_mime_types ]] && mime_types=$trixie_mime_types
    # To the origin: HTTP/1.1 on kept-alive connections (up to 32 idle ones
    # per worker, reused), and the client's host name as Host: $host, the
    # same for h1, h2 and h3 clients, without the port (nginx 1.26 leaves
    # $http_host empty on h3, whose :authority it does not copy into a Host
    # header). proxy_ssl_verify is off by default: the origin's certificate
    # is not checked. The origin's own Alt-Svc (h3lab serve advertises
    # its port) is dropped: the edge advertises its own, as HAProxy's
    # set-header and Caddy do. Response buffering and the rest are nginx's
    # defaults; no proxy_cache.
    # HTTP/3 as scripts/peer-server.sh's nginx-h3: only what it needs (a
    # QUIC listener, http3 on, Alt-Svc); ssl_early_data, quic_gso,
    # quic_retry stay off, nginx's defaults. add_header in a location
    # replaces the server's, so each location that adds one repeats it.
    alt_svc="add_header Alt-Svc 'h3=\":$port\"; ma=86400' always;"
    # Server-Timing: origin;dur=MS, the wait for the origin's response head
    # ($upstream_header_time, seconds to the ms, joined into ms by the map
    # below; empty, so unknown to a client, when there were several
    # upstream attempts or none).
    proxy="proxy_pass https://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
      proxy_set_header Host \$host;
      proxy_hide_header Alt-Svc;
      $alt_svc
      add_header Server-Timing \"origin;dur=\$upstream_header_ms\" always;"
    if [[ $forward == all ]]; then
      locations="location / {
      $proxy
    }"
    else
      locations="root $site;
    # Documents (/, .../, ....html) from the origin.
    location ~ (/|\\.html)\$ {
      $proxy
    }
    # The rest from the site, as a CDN would serve it from its cache.
    location / {
      $alt_svc
      add_header Cache-Control no-store always;
    }"
    fi
    cat > "$run/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $run/nginx.pid;
error_log stderr;
events { }
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
  upstream origin {
    server $origin;
    keepalive 32;
  }
  map \$upstream_header_time \$upstream_header_ms {
    "~^(?<seconds>[0-9]+)\\.(?<ms>[0-9]{3})\$" "\$seconds\$ms";
    default "";
  }
  server {
    listen $listen ssl;
    http2 on;
    listen $listen quic reuseport;
    http3 on;
    $alt_svc
    ssl_protocols TLSv1.3;
    ssl_certificate $cert;
    ssl_certificate_key $key;
    $locations
  }
}
NGINX
    exec "$nginx" -c "$run/nginx.conf"
    ;;
  haproxy)
    # HAProxy reads the certificate and its key from one PEM file.
    (umask 077 && cat "$cert" "$key" > "$run/cert+key.pem")
    if [[ $ip == *:* ]]; then tcp_bind=ipv6@$ip:$port quic_bind=quic6@$ip:$port
    else tcp_bind=$ip:$port quic_bind=quic4@$ip:$port; fi
    if [[ $origin_ip == *:* ]]; then server_addr=ipv6@$origin_ip:$origin_port
    else server_addr=$origin_ip:$origin_port; fi
    # To the origin over TLS without checking its certificate (verify
    # none), the protocol chosen by ALPN: http/1.1 on connections kept
    # alive and shared by HAProxy's default `http-reuse safe`, or h2.
    server_alpn=http/1.1
    [[ $origin_proto == h2 ]] && server_alpn=h2
    cat > "$run/haproxy.cfg" <<HAPROXY
global
  # QUIC on the OpenSSL compat layer (OpenSSL without a QUIC API for HAProxy
  # 3.0): off unless allowed; it offers no 0-RTT.
  limited-quic
  # No nbthread, cpu-map, maxconn: HAProxy's defaults (a thread per CPU).

defaults
  mode http
  # Debian's haproxy.cfg timeouts (HAProxy has none by default and warns).
  timeout connect 5s
  timeout client 50s
  timeout server 50s

frontend edge
  bind $tcp_bind ssl crt $run/cert+key.pem alpn h2,http/1.1 ssl-min-ver TLSv1.3
  bind $quic_bind ssl crt $run/cert+key.pem alpn h3
  http-after-response set-header alt-svc 'h3=":$port"; ma=86400'
  # The wait for the origin's response head (%Tr in a log line), in ms.
  http-response set-header server-timing "origin;dur=%[res.timer.hdr]"
  default_backend origin

backend origin
  server origin $server_addr ssl verify none alpn $server_alpn
HAPROXY
    exec "$haproxy" -f "$run/haproxy.cfg"
    ;;
  caddy)
    # To the origin over TLS without checking its certificate
    # (tls_insecure_skip_verify), HTTP/1.1 or HTTP/2 only; Caddy's
    # transport keeps connections alive (keepalive 2m, 32 idle per host).
    # Caddy adds X-Forwarded-For, -Proto, -Host and Via by default, and
    # advertises h3 (Alt-Svc) on every answer itself. To an https://
    # upstream it sends Host: the upstream's address unless told: the
    # client's Host (host:port as sent) goes through instead.
    versions=1.1
    [[ $origin_proto == h2 ]] && versions=2
    # The reverse_proxy block, indented by $1 tabs.
    proxy() {
      local tab
      tab=$(printf '\t%.0s' $(seq "$1"))
      sed "s/^/$tab/" <<PROXY
reverse_proxy https://$origin {
	header_up Host {hostport}
	header_down Server-Timing "origin;dur={http.reverse_proxy.upstream.latency_ms}"
	transport http {
		versions $versions
		tls_insecure_skip_verify
	}
}
PROXY
    }
    if [[ $forward == all ]]; then
      handlers=$(proxy 1)
    else
      handlers="	# Documents (/, .../, ....html) from the origin.
	@documents path / */ *.html
	handle @documents {
$(proxy 2)
	}
	# The rest from the site, as a CDN would serve it from its cache.
	handle {
		root * $site
		header Cache-Control no-store
		file_server
	}"
    fi
    cat > "$run/Caddyfile" <<CADDY
{
	admin off
	persist_config off
	auto_https off
	servers {
		protocols h1 h2 h3
	}
}
# Any host name on $ip.
https://:$port {
	bind $ip
	tls $cert $key {
		protocols tls1.3
	}
$handlers
}
CADDY
    XDG_DATA_HOME=$run XDG_CONFIG_HOME=$run exec "$caddy" run --adapter caddyfile --config "$run/Caddyfile"
    ;;
esac
