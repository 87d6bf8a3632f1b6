'use strict';
// The package as a user gets it: `npm pack`'s tarball, installed into a
// clean directory by an npm that finds no Rust toolchain on PATH, serves
// h3 with the prebuilt native module it carries; without that module, it
// names the platform it lacks and how to build one.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const { run, tempDir, load, until } = require('./helpers');

const PACKAGE = path.join(__dirname, '..');
const NATIVE = `h3lab-node.${process.platform}-${process.arch}-gnu.node`;

/** A directory for PATH holding only `node` and `npm`: no cargo, no rustc. */
function binWithoutRust() {
  const bin = tempDir();
  const npm = process.env.PATH.split(path.delimiter)
    .map((dir) => path.join(dir, 'npm'))
    .find((file) => fs.existsSync(file));
  assert.ok(npm, 'npm is not on PATH');
  fs.symlinkSync(process.execPath, path.join(bin, 'node'));
  fs.symlinkSync(fs.realpathSync(npm), path.join(bin, 'npm'));
  return bin;
}

/** The package packed, then installed into a clean project without Rust on PATH. */
async function installedFromTarball() {
  const packed = tempDir();
  const pack = await run('npm', ['pack', '--json', '--pack-destination', packed, PACKAGE]);
  assert.equal(pack.code, 0, `npm pack failed: ${pack.stderr}`);
  const [{ filename, files }] = JSON.parse(pack.stdout);
  assert.ok(
    files.some((file) => file.path === NATIVE),
    `the tarball carries no ${NATIVE}: ${files.map((file) => file.path).join(', ')}`,
  );
  const project = tempDir();
  fs.writeFileSync(path.join(project, 'package.json'), '{"name": "user-app", "private": true}\n');
  const env = { ...process.env, PATH: binWithoutRust(), HOME: project, npm_config_cache: path.join(project, '.npm') };
  delete env.CARGO_HOME;
  delete env.RUSTUP_HOME;
  const install = await new Promise((resolve) => {
    const args = ['install', '--offline', '--no-audit', '--no-fund', path.join(packed, filename)];
    const child = spawn('npm', args, { cwd: project, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('close', (code) => resolve({ code, stderr }));
  });
  assert.equal(install.code, 0, `npm install of the tarball failed: ${install.stderr}`);
  return { project, env, installed: path.join(project, 'node_modules', 'h3lab-node') };
}

/** A Node program in `project` that serves `/hello` with the installed package. */
function startUserServer(project, env) {
  const program = `
    const { createHttp3Server } = require('h3lab-node');
    const server = createHttp3Server({}, (req, res) => res.end('hello from the tarball\\n'));
    server.listen(0, '127.0.0.1').then((address) => {
      process.stdout.write(JSON.stringify({ port: address.port, certPem: server.certPem }) + '\\n');
    });
    process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
  `;
  const child = spawn(process.execPath, ['-e', program], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return { child, output: () => ({ stdout, stderr }) };
}

test('the packed tarball installs without Rust and serves h3 with its prebuilt module', async (t) => {
  const { project, env } = await installedFromTarball();
  const { child, output } = startUserServer(project, env);
  t.after(() => child.kill('SIGKILL'));
  let exited = null;
  child.on('exit', (code) => (exited = code));
  await until(() => output().stdout.includes('\n') || exited !== null, 20_000, 'the server listening');
  assert.equal(exited, null, `the server exited: ${output().stderr}`);
  const { port, certPem } = JSON.parse(output().stdout);
  const report = await load(`https://127.0.0.1:${port}/hello`, { proto: 'h3', requests: 20, certPem });
  assert.equal(report.completed, 20, report.stderr);
  assert.deepEqual(report.status_counts, { 200: 20 });
  assert.equal(report.proto, 'h3');
  assert.equal(report.connections_opened, 2);
});

test('without its native module the installed package names the platform and how to build one', async () => {
  const { project, env, installed } = await installedFromTarball();
  fs.rmSync(path.join(installed, NATIVE));
  const result = await new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', "require('h3lab-node')"], { cwd: project, env });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('close', (code) => resolve({ code, stderr }));
  });
  assert.notEqual(result.code, 0);
  assert.match(result.stderr, new RegExp(`no native module for ${process.platform}-${process.arch}`));
  assert.match(result.stderr, /npm run build/);
  assert.match(result.stderr, /Rust/);
});
