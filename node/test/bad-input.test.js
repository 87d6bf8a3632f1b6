'use strict';
// Bad input is a thrown Error or a clear HTTP answer, never a crash of the
// Node process.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');

const { createHttp3Server } = require('..');
const { load } = require('./helpers');

async function serve(t, handler, options = {}) {
  const server = createHttp3Server(options, handler);
  const address = await server.listen(0, '127.0.0.1');
  t.after(() => server.close());
  return { server, url: `https://127.0.0.1:${address.port}` };
}

test('a certificate that is not PEM is a thrown Error naming it', () => {
  assert.throws(
    () => createHttp3Server({ cert: 'not a certificate', key: 'not a key' }, () => {}),
    { name: 'Error', message: /the certificate holds no CERTIFICATE block; pass a PEM certificate with the cert option/ },
  );
});

test('a certificate without its key is a thrown Error', () => {
  assert.throws(() => createHttp3Server({ cert: 'x' }, () => {}), /pass both cert and key/);
});

test('bad option types are thrown TypeErrors', () => {
  assert.throws(() => createHttp3Server({ dualStack: 'yes' }, () => {}), TypeError);
  assert.throws(() => createHttp3Server({ handlerTimeoutMs: -1 }, () => {}), TypeError);
  assert.throws(() => createHttp3Server({}, 'not a function'), TypeError);
});

test('a port in use rejects listen with an Error naming the port', async () => {
  const blocker = net.createServer();
  await new Promise((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const { port } = blocker.address();
  try {
    const server = createHttp3Server(() => {});
    await assert.rejects(server.listen(port, '127.0.0.1'), (err) => {
      assert.ok(err instanceof Error);
      assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
      return true;
    });
    await assert.rejects(server.listen(70000), RangeError);
  } finally {
    blocker.close();
  }
});

test('a handler that throws is answered with 500 and reported', async (t) => {
  const errors = [];
  const { server, url } = await serve(t, (req) => {
    if (req.url === '/async') return Promise.reject(new Error('async handler failed'));
    throw new Error('handler failed');
  });
  server.on('error', (err) => errors.push(err.message));
  for (const path of ['/sync', '/async']) {
    const report = await load(`${url}${path}`, { proto: 'h3', requests: 3, certPem: server.certPem });
    assert.deepEqual(report.status_counts, { 500: 3 }, path);
  }
  assert.deepEqual(errors, [...Array(3).fill('handler failed'), ...Array(3).fill('async handler failed')]);
});

test('a handler that throws without an error listener is logged, not a crash', async (t) => {
  const logged = [];
  const original = console.error;
  console.error = (...args) => logged.push(args.map(String).join(' '));
  t.after(() => {
    console.error = original;
  });
  const { server, url } = await serve(t, () => {
    throw new Error('nobody listens');
  });
  const report = await load(`${url}/`, { proto: 'h2', requests: 2, certPem: server.certPem });
  assert.deepEqual(report.status_counts, { 500: 2 });
  assert.equal(logged.filter((line) => line.includes('nobody listens')).length, 2);
});

test('a handler that never responds is timed out with 504', async (t) => {
  const { server, url } = await serve(t, () => {}, { handlerTimeoutMs: 300 });
  const report = await load(`${url}/`, { proto: 'h3', requests: 4, certPem: server.certPem });
  assert.deepEqual(report.status_counts, { 504: 4 });
  assert.equal(server.stats().requestsInFlight, 0);
});

test('a body that stops mid-way, or a handler failing after the head, resets the stream', async (t) => {
  const { server, url } = await serve(
    t,
    (req, res) => {
      res.write('a first chunk\n');
      if (req.url === '/fail') setImmediate(() => res.destroy(new Error('gave up')));
    },
    { handlerTimeoutMs: 300 },
  );
  server.on('error', () => {});
  for (const path of ['/stall', '/fail']) {
    const report = await load(`${url}${path}`, { proto: 'h3', requests: 2, certPem: server.certPem });
    // Never a short body taken as complete: each request fails.
    assert.equal(report.failed, 2, path);
    assert.deepEqual(report.status_counts, {}, path);
    assert.match(report.stderr, /reset 2\b.*H3_INTERNAL_ERROR/, path);
  }
});

test('setHeader with a bad name throws inside the handler, which is answered with 500', async (t) => {
  const thrown = [];
  const { server, url } = await serve(t, (req, res) => {
    try {
      res.setHeader('bad header', 'x');
    } catch (err) {
      thrown.push(err.name);
      throw err;
    }
  });
  server.on('error', () => {});
  const report = await load(`${url}/`, { proto: 'h3', requests: 1, certPem: server.certPem });
  assert.deepEqual(report.status_counts, { 500: 1 });
  assert.deepEqual(thrown, ['TypeError']);
});
