// Bun.serve with HTTP/3 (Bun's QUIC is lsquic), serving ROOT at / with
// `Cache-Control: no-store`, for scripts/peer-server.sh. Bun's TCP side
// speaks HTTP/1.1 only (no h2 in its ALPN); it sends Alt-Svc by itself.
// Usage: bun bun-server.js IP PORT ROOT CERT KEY
const [ip, port, root, cert, key] = Bun.argv.slice(2);
const server = Bun.serve({
  hostname: ip,
  port: Number(port),
  tls: { cert: Bun.file(cert), key: Bun.file(key) },
  http3: true,
  async fetch(req) {
    const path = decodeURIComponent(new URL(req.url).pathname);
    if (path.includes("..")) return new Response("bad path", { status: 400 });
    const file = Bun.file(root + (path.endsWith("/") ? path + "index.html" : path));
    if (!(await file.exists())) return new Response("not found", { status: 404 });
    return new Response(file, { headers: { "cache-control": "no-store" } });
  },
});
console.log(`bun ${Bun.version} serving ${root} on ${server.url} (h1, h3)`);
