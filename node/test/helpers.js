'use strict';
// Shared by the package's tests: the h3lab binary (its load generator is
// the h3 client), child processes with a time bound, and skipping that
// fails in CI.

const { execFile } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const REPO = path.join(__dirname, '..', '..');

/** The newest built h3lab binary (H3LAB_BIN overrides). */
function h3labBinary() {
  if (process.env.H3LAB_BIN) return process.env.H3LAB_BIN;
  const built = ['debug', 'release']
    .map((profile) => path.join(REPO, 'target', profile, 'h3lab'))
    .filter((file) => fs.existsSync(file))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  if (built.length === 0) {
    throw new Error('no h3lab binary: run `cargo build` in the repository first, or set H3LAB_BIN');
  }
  return built[0];
}

/** Runs a program to its end (bounded by `timeoutMs`); its exit code and output. */
function run(program, args, timeoutMs = 60_000) {
  return new Promise((resolve) => {
    // Its temporary files (Chromium's among them) go to a directory removed at exit.
    const env = { ...process.env, TMPDIR: tempDir() };
    execFile(program, args, { timeout: timeoutMs, maxBuffer: 64 << 20, env }, (err, stdout, stderr) => {
      resolve({ code: err ? (err.code ?? err.signal) : 0, stdout, stderr });
    });
  });
}

/** Directories made by tempDir, removed when the test process exits, pass or fail. */
const made = [];
process.on('exit', () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h3lab-node-'));
  made.push(dir);
  return dir;
}

/** A bounded `h3lab load` against `url`; its JSON report. */
async function load(url, { proto, requests, connections = 2, certPem, extra = [] }) {
  const dir = tempDir();
  const ca = path.join(dir, 'ca.pem');
  const json = path.join(dir, 'load.json');
  fs.writeFileSync(ca, certPem);
  const args = ['load', '--proto', proto, '-n', String(requests), '-c', String(connections)];
  args.push('--ca', ca, '--json', json, '--timeout', '10s', '-q', ...extra, url);
  const result = await run(h3labBinary(), args);
  // A run whose requests all failed exits non-zero and still writes its report.
  if (!fs.existsSync(json)) {
    throw new Error(`h3lab load failed (${result.code}): ${result.stderr}`);
  }
  return { ...JSON.parse(fs.readFileSync(json, 'utf8')), stderr: result.stderr };
}

/** Skips on a developer's machine that lacks `what`; fails in CI. */
function missing(t, what) {
  if (process.env.CI === 'true') throw new Error(`${what} is missing, and CI must not skip`);
  t.skip(`${what} is missing`);
}

/** Resolves once `condition()` holds; rejects naming `what` after `limitMs`. */
async function until(condition, limitMs, what) {
  const deadline = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

module.exports = { h3labBinary, run, tempDir, load, missing, until };
