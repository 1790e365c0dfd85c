// SPDX-License-Identifier: GPL-2.0
//
// sdk_test.mjs: the unmodified E2B SDK (npm "e2b") as the client of cubed.
// Run by run_sdk_test.sh from a folder where "e2b" is installed, with
//   E2B_API_URL=http://127.0.0.1:<api port>
//   E2B_SANDBOX_URL=http://127.0.0.1:<envd port>
//   E2B_API_KEY=<a key cubed accepts>
//   CUBE_TEMPLATE=<template name>   (default "base")
// Every test asserts what the SDK returns or throws; the sandboxes it makes
// are killed before it ends.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Sandbox, CommandExitError, AuthenticationError, SandboxNotFoundError,
  SandboxError, FileNotFoundError,
} from 'e2b';

const template = process.env.CUBE_TEMPLATE || 'base';
const made = new Set();
let sbx;

after(async () => {
  for (const id of made) {
    try { await Sandbox.kill(id); } catch { /* already gone */ }
  }
});

test('Sandbox.create() returns a running sandbox', async () => {
  sbx = await Sandbox.create(template, { timeoutMs: 600_000 });
  made.add(sbx.sandboxId);
  assert.match(sbx.sandboxId, /^[0-9]+$/);
  assert.equal(await sbx.isRunning(), true);
});

test("commands.run('echo hi') streams stdout and exits 0", async () => {
  const seen = [];
  const r = await sbx.commands.run('echo hi', { onStdout: (d) => seen.push(d) });
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, 'hi\n');
  assert.equal(r.stderr, '');
  assert.equal(seen.join(''), 'hi\n');
});

test('a failing command throws CommandExitError with its status', async () => {
  await assert.rejects(
    sbx.commands.run('echo bad >&2; exit 3'),
    (e) => e instanceof CommandExitError && e.exitCode === 3 &&
      e.stderr === 'bad\n');
});

test('environment and working directory reach the command', async () => {
  const r = await sbx.commands.run('echo "$FOO" && pwd', {
    envs: { FOO: 'bar' }, cwd: '/tmp',
  });
  assert.equal(r.stdout, 'bar\n/tmp\n');
});

test('a background command is listed, then killed', async () => {
  const h = await sbx.commands.run('sleep 600', { background: true });
  assert.ok(h.pid > 0);
  const procs = await sbx.commands.list();
  assert.ok(procs.some((p) => p.pid === h.pid), 'listed');
  assert.equal(await h.kill(), true);
  await assert.rejects(h.wait(), (e) => e instanceof CommandExitError);
  const after = await sbx.commands.list();
  assert.ok(!after.some((p) => p.pid === h.pid), 'gone from the list');
  assert.equal(await sbx.commands.kill(h.pid), false);
});

test('stdin reaches a command started with stdin: true', async () => {
  const h = await sbx.commands.run('head -n 1', { background: true, stdin: true });
  await sbx.commands.sendStdin(h.pid, 'from-stdin\n');
  const r = await h.wait();
  assert.equal(r.stdout, 'from-stdin\n');
});

test('files: write, read, list, exists, makeDir, rename, remove', async () => {
  const info = await sbx.files.write('/tmp/sdk/a.txt', 'hello\n');
  assert.equal(info.path, '/tmp/sdk/a.txt');
  assert.equal(await sbx.files.read('/tmp/sdk/a.txt'), 'hello\n');
  const bytes = await sbx.files.read('/tmp/sdk/a.txt', { format: 'bytes' });
  assert.deepEqual(Array.from(bytes), Array.from(Buffer.from('hello\n')));
  const list = await sbx.files.list('/tmp/sdk');
  assert.deepEqual(list.map((e) => [e.name, e.type]), [['a.txt', 'file']]);
  assert.equal(await sbx.files.exists('/tmp/sdk/a.txt'), true);
  assert.equal(await sbx.files.exists('/tmp/sdk/none'), false);
  assert.equal(await sbx.files.makeDir('/tmp/sdk/d'), true);
  assert.equal(await sbx.files.makeDir('/tmp/sdk/d'), false);
  const moved = await sbx.files.rename('/tmp/sdk/a.txt', '/tmp/sdk/d/b.txt');
  assert.equal(moved.path, '/tmp/sdk/d/b.txt');
  await sbx.files.remove('/tmp/sdk');
  assert.equal(await sbx.files.exists('/tmp/sdk'), false);
  const r = await sbx.commands.run('test -e /tmp/sdk || echo removed');
  assert.equal(r.stdout, 'removed\n');
});

test('reading a missing file fails with FileNotFoundError', async () => {
  await assert.rejects(sbx.files.read('/no/such/file'),
    (e) => e instanceof FileNotFoundError &&
      /\/no\/such\/file.*does not exist/.test(e.message));
});

test('Sandbox.list() includes the sandbox', async () => {
  const items = await Sandbox.list().nextItems();
  const me = items.find((s) => s.sandboxId === sbx.sandboxId);
  assert.ok(me, 'listed');
  assert.equal(me.templateId, template);
  assert.equal(me.state, 'running');
});

test('setTimeout moves the end time', async () => {
  await sbx.setTimeout(120_000);
  const info = await sbx.getInfo();
  const left = info.endAt.getTime() - Date.now();
  assert.ok(left > 60_000 && left <= 125_000, `ends in ${left} ms`);
});

test('Sandbox.connect() reaches the same sandbox', async () => {
  const again = await Sandbox.connect(sbx.sandboxId);
  assert.equal(again.sandboxId, sbx.sandboxId);
  // the guest is named after its own sandbox (cube-<id>), and it holds
  // what this test wrote through the first handle
  const r = await again.commands.run('hostname');
  assert.equal(r.stdout, `cube-${sbx.sandboxId}\n`);
  await sbx.files.write('/tmp/connect-mark', sbx.sandboxId);
  assert.equal(await again.files.read('/tmp/connect-mark'), sbx.sandboxId);
});

test('fork copies a running sandbox', async () => {
  await sbx.files.write('/root/forked.txt', 'parent state\n');
  const [child] = await sbx.fork({ timeoutMs: 120_000 });
  assert.ok(child instanceof Sandbox, String(child));
  made.add(child.sandboxId);
  assert.notEqual(child.sandboxId, sbx.sandboxId);
  assert.equal(await child.files.read('/root/forked.txt'), 'parent state\n');
  await child.files.write('/root/forked.txt', 'child\n');
  assert.equal(await sbx.files.read('/root/forked.txt'), 'parent state\n');
  assert.equal(await child.kill(), true);
  made.delete(child.sandboxId);
});

test('a wrong API key is refused', async () => {
  await assert.rejects(
    Sandbox.create(template, { apiKey: 'not-a-key' }),
    (e) => e instanceof AuthenticationError);
});

test('an unknown template is refused', async () => {
  // SandboxError with the API's status: a network failure is a TypeError
  await assert.rejects(Sandbox.create('no-such-template'),
    (e) => e instanceof SandboxError && e.statusCode === 404 &&
      /template 'no-such-template' not found/.test(e.message));
});

test('kill ends the sandbox', async () => {
  assert.equal(await sbx.kill(), true);
  made.delete(sbx.sandboxId);
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId),
    (e) => e instanceof SandboxNotFoundError);
  assert.equal(await Sandbox.kill(sbx.sandboxId), false);
});
