// SPDX-License-Identifier: GPL-2.0
//
// sdk_envd_test.mjs: envd's pseudo-terminals through the unmodified E2B SDK
// (npm "e2b").  Run by run_sdk_test.sh from a folder where "e2b" is
// installed, with
//   E2B_API_URL=http://127.0.0.1:<api port>
//   E2B_SANDBOX_URL=http://127.0.0.1:<envd port>
//   E2B_API_KEY=<a key cubed accepts>
//   CUBE_TEMPLATE=<template name>   (default "base")
// Every test asserts what the SDK returns or throws; the sandboxes it makes
// are killed before it ends.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Sandbox, NotFoundError, FileNotFoundError, InvalidArgumentError,
} from 'e2b';

const template = process.env.CUBE_TEMPLATE || 'base';
const made = new Set();
let sbx;

after(async () => {
  for (const id of made) {
    try { await Sandbox.kill(id); } catch { /* already gone */ }
  }
});

const text = (chunks) => Buffer.concat(chunks.map((c) => Buffer.from(c)))
  .toString('utf8');

async function until(what, cond, ms = 20_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a sandbox for the envd tests', async () => {
  sbx = await Sandbox.create(template, { timeoutMs: 600_000 });
  made.add(sbx.sandboxId);
  assert.equal(await sbx.isRunning(), true);
});

test('pty.create runs bash on a terminal; input, resize and exit reach it',
  async () => {
    const out = [];
    const h = await sbx.pty.create({
      cols: 80, rows: 24, onData: (d) => out.push(d),
    });
    assert.ok(h.pid > 0);
    await sbx.pty.sendInput(h.pid, new TextEncoder().encode(
      'stty size; tty; echo $((6*7))x\n'));
    await until('the first answers', () => /42x/.test(text(out)));
    assert.match(text(out), /24 80/);
    assert.match(text(out), /\/dev\/pts\/[0-9]+/);

    await sbx.pty.resize(h.pid, { cols: 132, rows: 40 });
    await sbx.pty.sendInput(h.pid, new TextEncoder().encode(
      'stty size; exit 3\n'));
    const r = await h.wait().catch((e) => e);
    assert.equal(r.exitCode, 3);
    assert.match(text(out), /40 132/);
  });

test('pty.kill ends a pty; resizing a gone pty fails', async () => {
  const h = await sbx.pty.create({ cols: 40, rows: 10, onData: () => {} });
  assert.equal(await sbx.pty.kill(h.pid), true);
  const r = await h.wait().catch((e) => e);
  assert.notEqual(r.exitCode, 0);
  await assert.rejects(sbx.pty.resize(h.pid, { cols: 50, rows: 20 }),
    (e) => e instanceof NotFoundError && /process not found/.test(e.message));
});

test('resizing a command without a pty is refused', async () => {
  const h = await sbx.commands.run('sleep 30', { background: true });
  await assert.rejects(sbx.pty.resize(h.pid, { cols: 50, rows: 20 }),
    (e) => e instanceof InvalidArgumentError && /no pty/.test(e.message));
  await h.kill();
});

test('watchDir reports create, write, rename and remove; stop() ends it',
  async () => {
    await sbx.files.makeDir('/tmp/watched');
    const seen = [];
    const h = await sbx.files.watchDir('/tmp/watched', (e) => seen.push(e));
    const has = (type, name) => seen.some((e) => e.type === type &&
      e.name === name);
    await sbx.commands.run('echo one > /tmp/watched/a');
    await until('create and write of a',
      () => has('create', 'a') && has('write', 'a'));
    await sbx.commands.run('mv /tmp/watched/a /tmp/watched/b');
    await until('rename of a', () => has('rename', 'a') && has('create', 'b'));
    await sbx.files.remove('/tmp/watched/b');
    await until('remove of b', () => has('remove', 'b'));
    // a second watch on the same directory, left running, is the witness
    // that the event after stop() happened and was delivered: no fixed wait
    const witnessed = [];
    const w = await sbx.files.watchDir('/tmp/watched', (e) => witnessed.push(e));
    await h.stop();
    const n = seen.length;
    await sbx.commands.run('touch /tmp/watched/c');
    await until('the witness sees c',
      () => witnessed.some((e) => e.type === 'create' && e.name === 'c'));
    await w.stop();
    assert.equal(seen.length, n, 'no event after stop()');
    assert.ok(!seen.some((e) => e.name === 'c'), JSON.stringify(seen));
  });

test('watchDir of a missing directory or a file fails', async () => {
  await assert.rejects(sbx.files.watchDir('/no/such/dir', () => {}),
    (e) => e instanceof FileNotFoundError && /\/no\/such\/dir/.test(e.message));
  await sbx.files.write('/tmp/plain', 'x');
  await assert.rejects(sbx.files.watchDir('/tmp/plain', () => {}),
    (e) => e instanceof InvalidArgumentError && /\/tmp\/plain/.test(e.message));
});

test('at most 16 watches per sandbox', async () => {
  // a stopped watch may hold its slot until its next keepalive: count
  // until the refusal instead of expecting it at exactly the 17th
  const hs = [];
  let err;
  for (let i = 0; i < 20 && !err; i++) {
    try {
      hs.push(await sbx.files.watchDir('/tmp', () => {}));
    } catch (e) {
      err = e;
    }
  }
  assert.ok(err, 'a watch beyond the limit is refused');
  assert.match(String(err.message), /at most 16/);
  assert.ok(hs.length >= 14 && hs.length <= 16, `${hs.length} watches`);
  for (const h of hs)
    await h.stop();
});
