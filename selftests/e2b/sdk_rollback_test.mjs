// SPDX-License-Identifier: GPL-2.0
//
// sdk_rollback_test.mjs: cube's own checkpoint and rollback extension of
// the API, called with plain fetch() beside the unmodified E2B SDK (npm
// "e2b") against cubed, the way Documentation/e2b-api.rst shows.  Run by
// run_sdk_test.sh from a folder where "e2b" is installed, with
//   E2B_API_URL=http://127.0.0.1:<api port>
//   E2B_SANDBOX_URL=http://127.0.0.1:<envd port>
//   E2B_API_KEY=<a key cubed accepts>
//   CUBE_TEMPLATE=<template name>   (default "base")
// The sandboxes it makes are killed before it ends.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, ConnectionConfig } from 'e2b';

const template = process.env.CUBE_TEMPLATE || 'base';
const made = new Set();
let sbx;

after(async () => {
  for (const id of made) {
    try { await Sandbox.kill(id); } catch { /* already gone */ }
  }
});

// the API URL and key the SDK itself uses
const conf = new ConnectionConfig();

// one request of the extension: { status, body } (body parsed when JSON)
async function cube(method, path, body, key = conf.apiKey) {
  const res = await fetch(new URL(path, conf.apiUrl), {
    method,
    headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined :
      typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed = text;
  try { parsed = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  return { status: res.status, body: parsed };
}

const cp = (id) => `/sandboxes/${id}/checkpoints`;
const rb = (id) => `/sandboxes/${id}/rollback`;

// the error body every refusal carries
function refused(r, status, what) {
  assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.code, status, `${what}: code`);
  assert.ok(typeof r.body.message === 'string' && r.body.message.length > 0,
    `${what}: message`);
}

test('a checkpoint keeps files and what commands did; a rollback returns to it',
  async (t) => {
    sbx = await Sandbox.create(template, { timeoutMs: 600_000 });
    made.add(sbx.sandboxId);
    await sbx.files.write('/root/state.txt', 'one\n');
    assert.equal((await sbx.commands.run('echo ran > /tmp/ran; cat /tmp/ran'))
      .stdout, 'ran\n');

    const c = await cube('POST', cp(sbx.sandboxId), { name: 'c1' });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    assert.equal(c.body.name, 'c1');
    assert.ok(Number.isInteger(c.body.ms) && c.body.ms >= 0);
    assert.ok(c.body.pages > 0, `pages ${c.body.pages}`);
    t.diagnostic(`checkpoint: ${JSON.stringify(c.body)}`);

    const l = await cube('GET', cp(sbx.sandboxId));
    assert.equal(l.status, 200);
    assert.deepEqual(l.body, [{ name: 'c1' }]);

    // things change after it
    await sbx.files.write('/root/state.txt', 'two\n');
    await sbx.files.write('/root/new.txt', 'new\n');
    await sbx.commands.run('rm /tmp/ran; echo later > /tmp/later');
    assert.equal(await sbx.files.read('/root/state.txt'), 'two\n');

    const r = await cube('POST', rb(sbx.sandboxId), { checkpoint: 'c1' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.target, 'c1');
    assert.ok(Number.isInteger(r.body.us) && r.body.us > 0);
    assert.ok(r.body.pages > 0);
    t.diagnostic(`rollback: ${JSON.stringify(r.body)}`);

    assert.equal(await sbx.files.read('/root/state.txt'), 'one\n');
    assert.equal(await sbx.files.exists('/root/new.txt'), false);
    const s = await sbx.commands.run('cat /tmp/ran; ls /tmp/later 2>&1 || true');
    assert.match(s.stdout, /^ran\n.*No such file/s);
  });

test('a command running during a rollback ends with an error', async () => {
  const h = await sbx.commands.run('sleep 600', { background: true });
  // it runs
  const ps = await sbx.commands.run('grep -lx sleep /proc/[0-9]*/comm');
  assert.match(ps.stdout, /comm/);
  const r = await cube('POST', rb(sbx.sandboxId), { checkpoint: 'c1' });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  let timer;
  const outcome = await Promise.race([
    h.wait().then(() => 'ended without an error', (e) => e),
    new Promise((res) => { timer = setTimeout(() => res('still running after 120 s'), 120_000); }),
  ]);
  clearTimeout(timer);
  assert.ok(outcome instanceof Error, String(outcome));
  // the sandbox works after it, without that process
  const after1 = await sbx.commands.run('grep -lx sleep /proc/[0-9]*/comm || echo none');
  assert.equal(after1.stdout, 'none\n');
});

test('a rollback without a checkpoint returns to the template', async () => {
  const r = await cube('POST', rb(sbx.sandboxId), {});
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.target, '@restore');
  assert.equal(await sbx.files.exists('/root/state.txt'), false);
  // the checkpoint is still there
  assert.deepEqual((await cube('GET', cp(sbx.sandboxId))).body, [{ name: 'c1' }]);
});

test('a checkpoint without a name gets one', async () => {
  const c = await cube('POST', cp(sbx.sandboxId));
  assert.equal(c.status, 201, JSON.stringify(c.body));
  assert.equal(c.body.name, 'cp-1');
  const l = await cube('GET', cp(sbx.sandboxId));
  assert.deepEqual(l.body.map((x) => x.name).sort(), ['c1', 'cp-1']);
});

test('bad requests: 400, 404, 409, 401, and nothing changes', async () => {
  const id = sbx.sandboxId;
  const before = (await cube('GET', cp(id))).body;
  refused(await cube('POST', cp(id), '{"name":'), 400, 'bad JSON');
  refused(await cube('POST', cp(id), { name: '.hidden' }), 400, 'bad name');
  refused(await cube('POST', cp(id), { name: 'a/b' }), 400, 'name with /');
  refused(await cube('POST', cp(id), { name: 7 }), 400, 'name not a string');
  refused(await cube('POST', cp(id), { nom: 'x' }), 400, 'unknown field');
  refused(await cube('POST', rb(id), { checkpoint: 'c1', x: 1 }), 400,
    'rollback unknown field');
  refused(await cube('POST', rb(id), { checkpoint: '' }), 400,
    'rollback empty name');
  refused(await cube('DELETE', `${cp(id)}/.x`), 400, 'delete bad name');
  refused(await cube('POST', cp(id), { name: 'c1' }), 409, 'existing name');
  refused(await cube('POST', rb(id), { checkpoint: 'nosuch' }), 404,
    'unknown checkpoint');
  refused(await cube('DELETE', `${cp(id)}/nosuch`), 404,
    'delete unknown checkpoint');
  refused(await cube('POST', rb('nosuchsandbox'), {}), 404, 'unknown sandbox');
  refused(await cube('GET', cp('987654')), 404, 'unknown sandbox list');
  refused(await cube('POST', cp(id), { name: 'k' }, 'wrong-key'), 401,
    'wrong API key');
  refused(await cube('POST', rb(id), {}, 'wrong-key'), 401,
    'wrong API key, rollback');
  assert.deepEqual((await cube('GET', cp(id))).body, before);
  // the sandbox is untouched
  assert.equal((await sbx.commands.run('echo ok')).stdout, 'ok\n');
});

test('DELETE removes a checkpoint', async () => {
  const d = await cube('DELETE', `${cp(sbx.sandboxId)}/cp-1`);
  assert.equal(d.status, 204);
  assert.deepEqual((await cube('GET', cp(sbx.sandboxId))).body, [{ name: 'c1' }]);
});

test('a paused sandbox is refused with 409', async () => {
  assert.equal(await sbx.pause(), true);
  refused(await cube('POST', rb(sbx.sandboxId), { checkpoint: 'c1' }), 409,
    'rollback of a paused sandbox');
  refused(await cube('POST', cp(sbx.sandboxId), { name: 'p' }), 409,
    'checkpoint of a paused sandbox');
  await Sandbox.kill(sbx.sandboxId);
  made.delete(sbx.sandboxId);
  refused(await cube('POST', rb(sbx.sandboxId), {}), 404, 'killed sandbox');
});
