'use strict';
// The TypeScript typings compile against a typical use (test/types.ts).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { run } = require('./helpers');

test('index.d.ts type-checks a typical use, and rejects a bad option', async () => {
  const tsc = path.join(__dirname, '..', 'node_modules', 'typescript', 'bin', 'tsc');
  const result = await run(process.execPath, [
    tsc, '--noEmit', '--strict', '--target', 'es2020', '--module', 'commonjs',
    '--types', 'node', path.join(__dirname, 'types.ts'),
  ]);
  assert.equal(result.code, 0, result.stdout + result.stderr);
});
