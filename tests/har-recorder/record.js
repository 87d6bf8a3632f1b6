#!/usr/bin/env node
// Record a HAR of one page load with a real browser: the system Chromium,
// driven by playwright-core (which downloads no browser of its own).
//
//   node record.js URL OUT.har [--resolve HOST:PORT:ADDR ...] [--spki BASE64]
//                              [--allow-error-status]
//
//   --resolve HOST:PORT:ADDR  send connections for HOST:PORT to ADDR, as curl's
//                             --resolve; ADDR may carry its own port
//                             (www.example.test:443:127.0.0.1:8443), and an IPv6
//                             ADDR is written in brackets ([::1]:8443). Repeatable.
//   --spki BASE64             trust a certificate by the SHA-256 of its SPKI
//                             (what `h3lab serve` prints as spki-sha256:)
//   --allow-error-status      do not fail when the page itself answers 4xx/5xx
//
// The browser is $CHROMIUM, else `chromium` found on PATH. On success it prints
// one line `har: OUT entries=N status=S ms=T` to stdout and exits 0; on any
// failure it prints `record.js: ...` to stderr and exits 1 (2 for bad usage).
// OUT is removed first and again on failure: OUT exists afterwards iff exit 0.
'use strict';

const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const NAV_TIMEOUT_MS = 30_000;
// After `load`, until the network has been quiet for 500 ms (Playwright's
// `networkidle`), at most this long: what a page asks for after its load
// (the tab's icon, a beacon) is in a capture people record by hand, and
// without the wait whether it was recorded raced the context's close.
const IDLE_TIMEOUT_MS = 5_000;
const LAUNCH_TIMEOUT_MS = 30_000;
// Whole run, launch to HAR written: a hung browser must not hang the test.
const DEADLINE_MS = 90_000;

function usage(msg) {
  if (msg) process.stderr.write(`record.js: ${msg}\n`);
  process.stderr.write(
    'usage: node record.js URL OUT.har [--resolve HOST:PORT:ADDR ...] [--spki BASE64] [--allow-error-status]\n');
  process.exit(2);
}

let outPath = null; // set once OUT is known: removed on failure

function fail(msg) {
  if (outPath) {
    try {
      fs.rmSync(outPath, { force: true });
    } catch {}
  }
  process.stderr.write(`record.js: ${msg}\n`);
  process.exit(1);
}

// HOST:PORT:ADDR (ADDR = a.b.c.d | a.b.c.d:port | [v6] | [v6]:port | bare v6)
// -> a Chromium host-resolver rule "MAP HOST:PORT ADDR[:port]".
function resolveRule(spec) {
  const m = /^([^:\s,]+):(\d{1,5}):(\S+)$/.exec(spec);
  if (!m) usage(`--resolve wants HOST:PORT:ADDR, got '${spec}'`);
  const [, host, port, addr] = m;
  let target;
  if (addr.startsWith('[')) {
    if (!/^\[[0-9a-fA-F:.]+\](:\d{1,5})?$/.test(addr)) usage(`bad IPv6 address in --resolve '${spec}'`);
    target = addr;
  } else if ((addr.match(/:/g) || []).length > 1) {
    target = `[${addr}]`; // a bare IPv6 address, no port of its own
  } else if (/^[^:,\s]+(:\d{1,5})?$/.test(addr)) {
    target = addr;
  } else {
    usage(`bad address in --resolve '${spec}'`);
  }
  return `MAP ${host}:${port} ${target}`;
}

function parseArgs(argv) {
  const positional = [];
  const rules = [];
  let spki = null;
  let allowErrorStatus = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--resolve') rules.push(resolveRule(value()));
    else if (a.startsWith('--resolve=')) rules.push(resolveRule(a.slice('--resolve='.length)));
    else if (a === '--spki') spki = value();
    else if (a.startsWith('--spki=')) spki = a.slice('--spki='.length);
    else if (a === '--allow-error-status') allowErrorStatus = true;
    else if (a === '-h' || a === '--help') usage();
    else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else positional.push(a);
  }
  if (positional.length !== 2) usage('want exactly URL and OUT.har');
  const [url, out] = positional;
  try {
    new URL(url);
  } catch {
    usage(`not a URL: ${url}`);
  }
  if (spki !== null && !/^[A-Za-z0-9+/]+=*(,[A-Za-z0-9+/]+=*)*$/.test(spki)) {
    usage(`--spki wants base64 (comma-separated for several), got '${spki}'`);
  }
  return { url, out: path.resolve(out), rules, spki, allowErrorStatus };
}

function findChromium() {
  const name = process.env.CHROMIUM || 'chromium';
  if (name.includes('/')) {
    try {
      fs.accessSync(name, fs.constants.X_OK);
    } catch {
      fail(`CHROMIUM=${name} is not an executable file`);
    }
    return name;
  }
  try {
    return execFileSync('which', [name], { encoding: 'utf8' }).trim().split('\n')[0];
  } catch {
    fail(`no '${name}' on PATH (install Debian's chromium, or set CHROMIUM=/path/to/chrome)`);
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const executablePath = findChromium();

  let chromium;
  try {
    ({ chromium } = require('playwright-core'));
  } catch (e) {
    fail(`cannot load playwright-core (run: npm --prefix ${path.relative(process.cwd(), __dirname) || '.'} ci): ${e.message}`);
  }

  outPath = opts.out;
  try {
    fs.rmSync(opts.out, { force: true });
    fs.mkdirSync(path.dirname(opts.out), { recursive: true });
  } catch (e) {
    fail(`cannot prepare ${opts.out}: ${e.message}`);
  }

  const args = ['--no-sandbox', '--disable-quic'];
  if (opts.rules.length) args.push(`--host-resolver-rules=${opts.rules.join(',')}`);
  if (opts.spki) args.push(`--ignore-certificate-errors-spki-list=${opts.spki}`);

  const started = Date.now();
  let browser = null;
  const deadline = setTimeout(() => {
    // Playwright kills the browser it launched when the process exits.
    fail(`gave up after ${DEADLINE_MS} ms`);
  }, DEADLINE_MS);

  let status;
  try {
    try {
      browser = await chromium.launch({ executablePath, headless: true, args, timeout: LAUNCH_TIMEOUT_MS });
    } catch (e) {
      throw new Error(`cannot launch ${executablePath}: ${e.message}`);
    }
    const context = await browser.newContext({
      ignoreHTTPSErrors: true,
      recordHar: { path: opts.out, content: 'embed', mode: 'full' },
    });
    const page = await context.newPage();
    let response;
    try {
      response = await page.goto(opts.url, { waitUntil: 'load', timeout: NAV_TIMEOUT_MS });
    } catch (e) {
      await context.close().catch(() => {});
      throw new Error(`loading ${opts.url} failed: ${e.message.split('\n')[0]}`);
    }
    if (!response) {
      await context.close().catch(() => {});
      throw new Error(`loading ${opts.url} gave no response`);
    }
    status = response.status();
    // A page that never goes quiet (polling) keeps what it asked for so far.
    await page.waitForLoadState('networkidle', { timeout: IDLE_TIMEOUT_MS }).catch(() => {});
    // Closing the context is what writes the HAR.
    await context.close();
    await browser.close();
    browser = null;
    if (status >= 400 && !opts.allowErrorStatus) {
      throw new Error(`${opts.url} answered ${status} (--allow-error-status accepts it)`);
    }
  } catch (e) {
    if (browser) await browser.close().catch(() => {});
    fail(e.message);
  }

  let har;
  try {
    har = JSON.parse(fs.readFileSync(opts.out, 'utf8'));
  } catch (e) {
    fail(`no readable HAR at ${opts.out}: ${e.message}`);
  }
  const entries = (har.log && har.log.entries) || [];
  if (entries.length === 0) fail(`HAR at ${opts.out} has no entries`);
  clearTimeout(deadline);
  process.stdout.write(`har: ${opts.out} entries=${entries.length} status=${status} ms=${Date.now() - started}\n`);
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
