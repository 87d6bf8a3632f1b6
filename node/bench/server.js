'use strict';
// The Node.js target of the `node` bench preset: one request handler,
// served over h1 and h2 by Node's own `http2.createSecureServer` (with
// allowHTTP1, so h1 is Node's http/1.1 server code) on TCP, and over h3 by
// h3lab-node on UDP, on the same port. It answers `/bytes/{n}` with n bytes,
// as `h3lab serve` does, so bench workloads run against either.
//
//   node node/bench/server.js --host 127.0.0.1 --port 8443
//
// The certificate here is a self-signed benchmark fixture (bench clients
// connect with --insecure), not a secret.

const fs = require('node:fs');
const http2 = require('node:http2');
const path = require('node:path');
const { parseArgs } = require('node:util');

const { createHttp3Server } = require('..');

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '8443' },
  },
});
const port = Number(values.port);
const key = fs.readFileSync(path.join(__dirname, 'key.pem'));
const cert = fs.readFileSync(path.join(__dirname, 'cert.pem'));

/** 64 KiB of the byte pattern, sliced for every response. */
const PATTERN = Buffer.alloc(64 << 10, 'h');

/** The handler both servers share, written for the http2 compatibility API. */
function handler(req, res) {
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
