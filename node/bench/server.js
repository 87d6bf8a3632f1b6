'use strict';
// The Node.js target of the `node` bench preset: one request handler,
// served over h1 and h2 by Node's own `http2.createSecureServer` (with
// allowHTTP1, so h1 is Node's http/1.1 server code) on TCP, and over h3 by
// h3lab-node on UDP, on the same port. It answers `/bytes/{n}` with n bytes,
// as `h3lab serve` does, so bench workloads run against either. With
// `--root DIR` it serves the files under DIR instead (a page's site, or
// the bench's `bytes/N` bodies), every answer `Cache-Control: no-store`.
//
//   node node/bench/server.js --host 127.0.0.1 --port 8443 [--root DIR]
//     [--cert CERT.pem --key KEY.pem]
//
// The default certificate is a self-signed benchmark fixture (bench
// clients connect with --insecure), not a secret.

const fs = require('node:fs');
const http2 = require('node:http2');
const path = require('node:path');
const { parseArgs } = require('node:util');

const { createHttp3Server } = require('..');

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '8443' },
    root: { type: 'string' },
    cert: { type: 'string', default: path.join(__dirname, 'cert.pem') },
    key: { type: 'string', default: path.join(__dirname, 'key.pem') },
  },
});
const port = Number(values.port);
const key = fs.readFileSync(values.key);
const cert = fs.readFileSync(values.cert);

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css',
  '.js': 'text/javascript',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
};

/** Serves the file under --root that the path names (`/` is index.html). */
function serveFile(req, res) {
  const name = decodeURIComponent(new URL(req.url, 'https://x').pathname);
  const root = path.resolve(values.root);
  const file = path.join(root, name.endsWith('/') ? `${name}index.html` : name);
  if (!file.startsWith(root + path.sep)) {
    res.statusCode = 404;
    return res.end();
  }
  fs.stat(file, (err, stat) => {
    if (err || !stat.isFile()) {
      res.statusCode = 404;
      return res.end();
    }
    res.setHeader('content-type', TYPES[path.extname(file)] || 'application/octet-stream');
    res.setHeader('content-length', stat.size);
    res.setHeader('cache-control', 'no-store');
    fs.createReadStream(file).pipe(res);
  });
}

/** 64 KiB of the byte pattern, sliced for every response. */
const PATTERN = Buffer.alloc(64 << 10, 'h');

/** The handler both servers share, written for the http2 compatibility API. */
function handler(req, res) {
  if (values.root) return serveFile(req, res);
  const match = /^\/bytes\/(\d+)$/.exec(req.url);
  if (!match) {
    res.statusCode = 404;
    res.end('only /bytes/{n} here\n');
    return;
  }
  let left = Number(match[1]);
  res.setHeader('content-type', 'application/octet-stream');
  res.setHeader('content-length', left);
  if (left <= PATTERN.length) {
    res.end(PATTERN.subarray(0, left));
    return;
  }
  const pump = () => {
    while (left > 0) {
      const chunk = PATTERN.subarray(0, Math.min(left, PATTERN.length));
      left -= chunk.length;
      if (!res.write(chunk)) return res.once('drain', pump);
    }
    res.end();
  };
  pump();
}

async function main() {
  // h3 first: it binds the port's TCP side too, and lets it go at once.
  const h3 = createHttp3Server({ key, cert, dualStack: false }, handler);
  await h3.listen(port, values.host);
  const tcp = http2.createSecureServer({ key, cert, allowHTTP1: true }, handler);
  tcp.on('error', (err) => {
    console.error(`node bench server: ${err.message}`);
    process.exit(1);
  });
  tcp.listen(port, values.host, () => {
    console.log(`listening: ${values.host}:${port} (h1, h2: node ${process.version}; h3: h3lab-node)`);
  });
  const stop = () => Promise.allSettled([h3.close(), new Promise((r) => tcp.close(r))]).then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err) => {
  console.error(`node bench server: ${err.message}`);
  process.exit(1);
});
