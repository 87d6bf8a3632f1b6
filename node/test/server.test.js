'use strict';
// The package against real clients: h3lab's own load generator over h3, h2
// and h1, Node's http2 client, and Chromium over h3.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http2 = require('node:http2');
const net = require('node:net');
const path = require('node:path');

const { createHttp3Server } = require('..');
const { h3labBinary, run, tempDir, load, missing, until } = require('./helpers');

/** A server with `handler` on a free port; closed when the test ends. */
async function serve(t, handler, options = {}) {
  const server = createHttp3Server(options, handler);
  const address = await server.listen(0, '127.0.0.1');
  t.after(() => server.close());
  return { server, url: `https://127.0.0.1:${address.port}`, port: address.port };
}

/** One request over Node's own http2 client; status, headers and body. */
function h2Request(server, url, { method = 'GET', path: target = '/', body, pauseMs = 0 } = {}) {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, { ca: server.certPem });
    session.on('error', reject);
    const stream = session.request({ ':method': method, ':path': target });
    const chunks = [];
    let head;
    stream.on('response', (headers) => {
      head = headers;
      if (pauseMs > 0) {
        stream.pause();
        setTimeout(() => stream.resume(), pauseMs);
      }
    });
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.on('end', () => {
      session.close();
      resolve({ status: head[':status'], headers: head, body: Buffer.concat(chunks) });
    });
    stream.on('error', (err) => {
      session.destroy();
      reject(err);
    });
    stream.end(body);
  });
}

/** The handler an http2 app would have: it only uses the compatibility API. */
function http2StyleHandler(seen) {
  return (req, res) => {
    seen.push({ url: req.url, version: req.httpVersion, authority: req.headers[':authority'] });
    if (req.url === '/hello') {
      res.setHeader('content-type', 'text/plain');
      res.end('hello from node\n');
    } else if (req.url.startsWith('/bytes/')) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.alloc(Number(req.url.slice(7)), 'x'));
    } else {
      res.statusCode = 404;
      res.end('not found\n');
    }
  };
}

test('h3 requests from h3lab load are answered by the JavaScript handler', async (t) => {
  const seen = [];
  const { server, url } = await serve(t, http2StyleHandler(seen));
  const report = await load(`${url}/bytes/1000`, { proto: 'h3', requests: 200, certPem: server.certPem });
  assert.equal(report.failed, 0);
  assert.deepEqual(report.status_counts, { 200: 200 });
  assert.equal(report.body_bytes, 200 * 1000);
  assert.equal(seen.length, 200);
  assert.ok(seen.every((s) => s.version === '3' && s.url === '/bytes/1000'));
  const stats = server.stats();
  assert.equal(stats.requests.h3, 200);
  // The load's connections, plus the one its preflight check opens and
  // closes at once: counted only if its HTTP/3 set-up finished before the
  // client closed it, which is a race.
  const total = stats.connectionsTotal.h3;
  assert.ok(
    total === report.connections_opened || total === report.connections_opened + 1,
    `${total} connections counted, the load opened ${report.connections_opened}`,
  );
});

test('the same handler serves h1, h2 and h3, and TCP responses advertise h3', async (t) => {
  const seen = [];
  const { server, url, port } = await serve(t, http2StyleHandler(seen));
  for (const proto of ['h1', 'h2', 'h3']) {
    const report = await load(`${url}/hello`, { proto, requests: 20, certPem: server.certPem });
    assert.deepEqual(report.status_counts, { 200: 20 }, proto);
  }
  const versions = seen.map((s) => s.version);
  assert.deepEqual(versions, [...Array(20).fill('1.1'), ...Array(20).fill('2.0'), ...Array(20).fill('3')]);
  const h2 = await h2Request(server, url, { path: '/hello' });
  assert.equal(h2.status, 200);
  assert.equal(h2.body.toString(), 'hello from node\n');
  assert.equal(h2.headers['alt-svc'], `h3=":${port}"; ma=86400`);
  assert.equal(seen.at(-1).authority, `127.0.0.1:${port}`);
  const stats = server.stats();
  assert.deepEqual(stats.requests, { h1: 20, h2: 21, h3: 20 });
});

test('one connection of each protocol carries 10,000 requests with no reconnect and no error', async (t) => {
  const { server, url } = await serve(t, http2StyleHandler([]));
  for (const proto of ['h1', 'h2', 'h3']) {
    const before = server.stats().connectionsTotal[proto];
    const report = await load(`${url}/hello`, { proto, requests: 10_000, connections: 1, certPem: server.certPem });
    assert.equal(report.failed, 0, `${proto}: ${JSON.stringify(report.first_errors)}`);
    assert.equal(report.reconnects, 0, proto);
    assert.deepEqual(report.status_counts, { 200: 10_000 }, proto);
    assert.equal(report.connections_opened, 1, proto);
    // The load's one connection, and the preflight check's if its set-up
    // finished before the client closed it.
    const opened = server.stats().connectionsTotal[proto] - before;
    assert.ok(opened === 1 || opened === 2, `${proto}: the server counted ${opened} connections`);
  }
});

test('without dualStack only h3 is served, and the TCP port refuses', async (t) => {
  const { server, url, port } = await serve(t, http2StyleHandler([]), { dualStack: false });
  const report = await load(`${url}/hello`, { proto: 'h3', requests: 5, certPem: server.certPem });
  assert.deepEqual(report.status_counts, { 200: 5 });
  await assert.rejects(
    new Promise((resolve, reject) => net.connect(port, '127.0.0.1', resolve).on('error', reject)),
    /ECONNREFUSED/,
  );
});

test('POST bodies arrive whole over h3 and h2', async (t) => {
  const body = crypto.randomBytes(300_000);
  const digest = crypto.createHash('sha256').update(body).digest('hex');
  const { server, url } = await serve(t, async (req, res) => {
    const hash = crypto.createHash('sha256');
    let length = 0;
    for await (const chunk of req) {
      hash.update(chunk);
      length += chunk.length;
    }
    const ok = hash.digest('hex') === digest && req.complete;
    res.statusCode = ok ? 200 : 400;
    res.end(`${length}\n`);
  });
  const file = path.join(tempDir(), 'body.bin');
  fs.writeFileSync(file, body);
  const report = await load(`${url}/upload`, {
    proto: 'h3',
    requests: 10,
    certPem: server.certPem,
    extra: ['-X', 'POST', '-d', `@${file}`],
  });
  assert.deepEqual(report.status_counts, { 200: 10 });
  const h2 = await h2Request(server, url, { method: 'POST', path: '/upload', body });
  assert.equal(h2.status, 200);
  assert.equal(h2.body.toString(), `${body.length}\n`);
});

test('res.write applies backpressure while the client does not read', async (t) => {
  const total = 16 << 20;
  const chunk = Buffer.alloc(64 << 10, 'b');
  let written = 0;
  let heldAt = null;
  const { server, url } = await serve(t, (req, res) => {
    const pump = () => {
      while (written < total) {
        written += chunk.length;
        if (!res.write(chunk)) return res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  const pauseMs = 1000;
  const reading = h2Request(server, url, { path: '/stream', pauseMs });
  await new Promise((resolve) => setTimeout(resolve, pauseMs / 2));
  heldAt = written;
  const response = await reading;
  assert.equal(response.status, 200);
  assert.equal(response.body.length, total);
  // While the client read nothing, the handler was held well short of the
  // whole body: by the client's flow-control window and the native queue.
  assert.ok(heldAt < total / 2, `the handler had written ${heldAt} of ${total} bytes during the pause`);
});

test('a page served by the handler loads in Chromium over h3', async (t) => {
  const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((f) => fs.existsSync(f));
  if (!chromium) return missing(t, 'Chromium (apt-get install chromium)');
  const seen = [];
  const { server, port } = await serve(t, (req, res) => {
    seen.push({ url: req.url, version: req.httpVersion });
    if (req.url === '/app.js') {
      res.setHeader('content-type', 'text/javascript');
      res.end("document.getElementById('out').textContent = 'script ran over ' + performance.getEntriesByType('navigation')[0].nextHopProtocol;");
    } else {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end('<!doctype html><title>h3lab-node</title><p id="out">no script</p><script src="/app.js"></script>');
    }
  });
  const origin = `127.0.0.1:${port}`;
  const result = await run(chromium, [
    '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    `--user-data-dir=${tempDir()}`,
    `--origin-to-force-quic-on=${origin}`,
    `--ignore-certificate-errors-spki-list=${server.spkiSha256}`,
    '--dump-dom', `https://${origin}/`,
  ], 60_000);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /script ran over h3/);
  const paths = seen.map((s) => s.url).sort();
  assert.deepEqual(paths.filter((p) => p !== '/favicon.ico'), ['/', '/app.js']);
  assert.ok(seen.every((s) => s.version === '3'), JSON.stringify(seen));
});

/**
 * A UDP relay from a local port to `target`, which can move its upstream
 * socket to a new port mid-run: the server then sees the client's address
 * change (NAT rebinding), as a phone's network handoff would show it.
 */
async function udpRelay(t, target) {
  const dgram = require('node:dgram');
  const bound = (socket) => new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const front = dgram.createSocket('udp4');
  await bound(front);
  let client = null;
  let upstream = null;
  const open = async () => {
    const socket = dgram.createSocket('udp4');
    await bound(socket);
    socket.on('message', (msg) => client && front.send(msg, client.port, client.address));
    return socket;
  };
  upstream = await open();
  const old = [];
  front.on('message', (msg, from) => {
    client = from;
    upstream.send(msg, target.port, target.address);
  });
  t.after(() => [front, upstream, ...old].forEach((s) => s.close()));
  return {
    port: front.address().port,
    async move() {
      old.push(upstream);
      upstream = await open();
      return upstream.address().port;
    },
  };
}

test('a client whose address changes mid-connection is followed, with a migrate event', async (t) => {
  const moves = [];
  let relay = null;
  let moved = null;
  let served = 0;
  const { server, port } = await serve(t, async (req, res) => {
    served += 1;
    // Half-way through, the relay moves to a new port before answering.
    if (served === 50) moved = await relay.move();
    res.end('ok\n');
  });
  server.on('migrate', (move) => moves.push(move));
  relay = await udpRelay(t, { address: '127.0.0.1', port });
  const report = await load(`https://127.0.0.1:${relay.port}/`, {
    proto: 'h3', requests: 100, connections: 1, certPem: server.certPem,
  });
  assert.equal(report.failed, 0);
  assert.deepEqual(report.status_counts, { 200: 100 });
  assert.equal(moves.length, 1, JSON.stringify(moves));
  assert.equal(moves[0].to, `127.0.0.1:${moved}`);
  assert.equal(server.stats().migrations, 1);
});

test('session, sessionClose and 0rtt events are emitted', async (t) => {
  const events = [];
  const { server, url } = await serve(t, http2StyleHandler([]));
  for (const name of ['session', 'sessionClose', '0rtt']) server.on(name, (e) => events.push([name, e]));
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, 'ca.pem'), server.certPem);
  const probe = await run(h3labBinary(), [
    'probe', 'ttfb', '--proto', 'h3', '--mode', '0rtt', '--samples', '2', '--ca', path.join(dir, 'ca.pem'), '-q', `${url}/hello`,
  ]);
  assert.equal(probe.code, 0, probe.stderr);
  const named = (name) => events.filter(([n]) => n === name);
  const sessions = named('session');
  assert.ok(sessions.length >= 3, JSON.stringify(events));
  // The probe has closed every connection; the server sees each close.
  await until(() => named('sessionClose').length === sessions.length, 5000, 'every session closes');
  assert.ok(sessions.every(([, e]) => e.protocol === 'h3' && e.remoteAddress.startsWith('127.0.0.1:')));
  const zeroRtt = events.filter(([name]) => name === '0rtt').map(([, e]) => e.accepted);
  assert.deepEqual(zeroRtt, [true, true]);
  assert.equal(server.stats().zeroRttAccepted, 2);
});

test('close() lets a request in flight finish, then refuses new ones', async (t) => {
  let release = null;
  const started = new Promise((resolve) => {
    release = resolve;
  });
  const { server, url } = await serve(t, (req, res) => {
    release();
    setTimeout(() => res.end('finished after close began\n'), 300);
  });
  const inFlight = load(`${url}/slow`, { proto: 'h3', requests: 1, connections: 1, certPem: server.certPem });
  await started;
  let closed = false;
  const closing = server.close().then(() => {
    closed = true;
  });
  const report = await inFlight;
  assert.deepEqual(report.status_counts, { 200: 1 });
  await closing;
  assert.ok(closed);
  assert.equal(server.address(), null);
  const after = await run(h3labBinary(), [
    'load', '--proto', 'h3', '--insecure', '-n', '1', '--connect-timeout', '1s', '-q', `${url}/again`,
  ]);
  assert.notEqual(after.code, 0);
  assert.match(after.stderr, /no HTTP\/3 \(QUIC\) answer/);
});
