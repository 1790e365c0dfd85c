// SPDX-License-Identifier: GPL-2.0
//
// sdk_more_test.mjs: more of the SDK's surface, answered as E2B answers
// it, through the unmodified E2B SDK (npm "e2b").  Run by run_sdk_test.sh
// from a folder where "e2b" is installed, with
//   E2B_API_URL=http://127.0.0.1:<api port>
//   E2B_SANDBOX_URL=http://127.0.0.1:<envd port>
//   E2B_API_KEY=<a key cubed accepts>
//   CUBE_TEMPLATE=<template name>   (default "base")
// Covered: Template.exists; Sandbox.deleteSnapshot (refused while a
// sandbox made from the snapshot lives, then true, then false, and never
// for a template not made through the API); files.write with gzip (read
// back as written), a gzip bomb and a damaged gzip body refused without
// writing anything; getMetrics over a time range; watchDir with
// recursive: true; files.write with metadata (envd 0.6.2), reported by
// write, getInfo and list; signed uploadUrl and downloadUrl used by a
// plain HTTP client (no token, no sandbox header), and refused when
// changed, used for the other operation, or expired.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createGzip } from 'node:zlib';
import { Sandbox, SandboxError, Template } from 'e2b';

// an error the API answered with HTTP status @code and a message matching
// @re (the SDK's SandboxError carries the status): not a network error
const apiError = (code, re) => (e) => {
  assert.ok(e instanceof SandboxError, `${e?.constructor?.name}: ${e?.message}`);
  assert.equal(e.statusCode, code, e.message);
  assert.match(e.message, re);
  return true;
};

const template = process.env.CUBE_TEMPLATE || 'base';
const made = [];
let sbx;

after(async () => {
  for (const id of made) {
    try { await Sandbox.kill(id); } catch { /* already gone */ }
  }
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('a sandbox', async () => {
  sbx = await Sandbox.create(template, { timeoutMs: 900_000 });
  made.push(sbx.sandboxId);
  assert.ok(await sbx.isRunning());
});

test('Template.exists', async () => {
  assert.equal(await Template.exists(template), true);
  assert.equal(await Template.exists(`no-such-template-${process.pid}`), false);
});

test('deleteSnapshot', async () => {
  const name = `more-snap-${process.pid}`;
  await sbx.commands.run('echo kept > /tmp/more-snap.txt');
  const snap = await sbx.createSnapshot({ name });
  assert.equal(snap.snapshotId, name);
  assert.equal(await Template.exists(name), true);
  // a sandbox made from it keeps it
  const child = await Sandbox.create(name, { timeoutMs: 600_000 });
  made.push(child.sandboxId);
  assert.equal(await child.files.read('/tmp/more-snap.txt'), 'kept\n');
  await assert.rejects(Sandbox.deleteSnapshot(name), apiError(409, /kill it first|in use/));
  assert.equal(await Template.exists(name), true);
  await child.kill();
  assert.equal(await Sandbox.deleteSnapshot(name), true);
  assert.equal(await Template.exists(name), false);
  const listed = await Sandbox.listSnapshots({ sandboxId: sbx.sandboxId })
    .nextItems();
  assert.ok(!listed.some((x) => x.snapshotId === name), 'still listed');
  await assert.rejects(Sandbox.create(name), apiError(404, /not found/));
  // gone: false, as E2B answers a snapshot it does not know
  assert.equal(await Sandbox.deleteSnapshot(name), false);
  // a template not made through the API stays
  await assert.rejects(Sandbox.deleteSnapshot(template), apiError(403, /no snapshot/));
  assert.equal(await Template.exists(template), true);
  // the source sandbox runs on
  assert.equal((await sbx.commands.run('cat /tmp/more-snap.txt')).stdout,
    'kept\n');
});

// a raw upload with the SDK's headers, for bodies the SDK would not send
async function rawUpload(path, body, headers) {
  const url = new URL('/files', process.env.E2B_SANDBOX_URL);
  url.searchParams.set('path', path);
  const res = await fetch(url, {
    method: 'POST', body, duplex: 'half',
    headers: {
      'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983',
      'X-Access-Token': sbx.envdAccessToken,
      'Content-Type': 'application/octet-stream', ...headers,
    },
  });
  return { status: res.status, text: await res.text() };
}

// @n MiB of zeros, gzipped
async function gzipZeros(n) {
  const gz = createGzip({ level: 9 });
  const chunks = [];
  gz.on('data', (c) => chunks.push(c));
  const done = new Promise((r) => gz.on('end', r));
  const mib = Buffer.alloc(1 << 20);
  for (let i = 0; i < n; i++) {
    if (!gz.write(mib)) await new Promise((r) => gz.once('drain', r));
  }
  gz.end();
  await done;
  return Buffer.concat(chunks);
}

test('files.write with gzip', async () => {
  const text = 'compressed on the way\n'.repeat(1000);
  const info = await sbx.files.write('/tmp/gz/a.txt', text, { gzip: true });
  assert.equal(info.path, '/tmp/gz/a.txt');
  assert.equal(await sbx.files.read('/tmp/gz/a.txt'), text);
  const bytes = new Uint8Array(300_000);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919) % 251;
  await sbx.files.write('/tmp/gz/b.bin', bytes, { gzip: true });
  const back = await sbx.files.read('/tmp/gz/b.bin', { format: 'bytes' });
  assert.equal(back.length, bytes.length);
  assert.ok(Buffer.from(back).equals(Buffer.from(bytes)), 'bytes differ');
  // and through the sandbox: the file is what was written
  assert.equal((await sbx.commands.run('wc -c < /tmp/gz/b.bin')).stdout.trim(),
    '300000');
});

test('a gzip bomb or a damaged gzip body writes nothing', async () => {
  // 300 MiB of zeros: more than any file may hold
  const bomb = await gzipZeros(300);
  assert.ok(bomb.length < (1 << 20), `bomb of ${bomb.length} bytes`);
  const r = await rawUpload('/tmp/gz/bomb', bomb, { 'Content-Encoding': 'gzip' });
  assert.equal(r.status, 413, r.text);
  assert.match(r.text, /inflates/);
  assert.equal(await sbx.files.exists('/tmp/gz/bomb'), false);
  const good = await gzipZeros(1);
  const bad = Buffer.from(good);
  bad[bad.length - 5] ^= 0xff;	// the length in its trailer
  const r2 = await rawUpload('/tmp/gz/bad', bad, { 'Content-Encoding': 'gzip' });
  assert.equal(r2.status, 400, r2.text);
  assert.match(r2.text, /gzip/);
  assert.equal(await sbx.files.exists('/tmp/gz/bad'), false);
  const r3 = await rawUpload('/tmp/gz/br', good, { 'Content-Encoding': 'br' });
  assert.equal(r3.status, 400, r3.text);
  assert.match(r3.text, /Content-Encoding/);
  assert.equal(await sbx.files.exists('/tmp/gz/br'), false);
  // the same body, whole, is written
  const r4 = await rawUpload('/tmp/gz/zeros', good, { 'Content-Encoding': 'gzip' });
  assert.equal(r4.status, 200, r4.text);
  assert.equal((await sbx.commands.run('wc -c < /tmp/gz/zeros')).stdout.trim(),
    String(1 << 20));
});

test('getMetrics over a time range', async () => {
  // samples are taken every 5 s
  await sleep(16_000);
  const all = await sbx.getMetrics();
  assert.ok(all.length >= 3, `${all.length} samples`);
  for (let i = 1; i < all.length; i++) {
    assert.ok(all[i].timestamp > all[i - 1].timestamp, 'oldest first');
  }
  for (const m of all) {
    assert.ok(m.cpuCount >= 1 && m.memTotal > 0 && m.memUsed > 0, JSON.stringify(m));
  }
  // one second: the sample of that second alone
  const t = all[1].timestamp;
  const one = await sbx.getMetrics({ start: t, end: t });
  assert.equal(one.length, 1);
  assert.equal(one[0].timestamp.getTime(), t.getTime());
  // from the second sample on: all but the first, and maybe a newer one
  const from = await sbx.getMetrics({ start: t });
  assert.equal(from[0].timestamp.getTime(), t.getTime());
  assert.ok(!from.some((m) => m.timestamp < t));
  // up to the second sample: the first two
  const upTo = await sbx.getMetrics({ start: all[0].timestamp, end: t });
  assert.deepEqual(upTo.map((m) => m.timestamp.getTime()),
    [all[0].timestamp.getTime(), t.getTime()]);
  // a range in the future, or before the sandbox: nothing
  const later = new Date(Date.now() + 3600_000);
  assert.deepEqual(await sbx.getMetrics({ start: later }), []);
  assert.deepEqual(await sbx.getMetrics({
    start: new Date(1000_000), end: new Date(2000_000),
  }), []);
  // start after end is refused
  await assert.rejects(sbx.getMetrics({ start: t, end: all[0].timestamp }),
    apiError(400, /after/));
});

test('watchDir with recursive: true', async () => {
  await sbx.files.makeDir('/tmp/rw/old/deep');
  const seen = [];
  const w = await sbx.files.watchDir('/tmp/rw', (e) => seen.push(e),
    { recursive: true });
  const has = (name, type) => seen.some((e) => e.name === name && e.type === type);
  try {
    await sbx.commands.run('echo top > /tmp/rw/top.txt');
    await sbx.commands.run('echo deep > /tmp/rw/old/deep/d.txt');
    // a directory made after the watch began is watched too
    await sbx.files.makeDir('/tmp/rw/new');
    for (let i = 0; i < 40 && !has('new', 'create'); i++) await sleep(250);
    await sbx.commands.run('echo new > /tmp/rw/new/n.txt');
    await sbx.commands.run('rm /tmp/rw/old/deep/d.txt');
    for (let i = 0; i < 40; i++) {
      if (has('new/n.txt', 'write') && has('old/deep/d.txt', 'remove')) break;
      await sleep(250);
    }
    const got = JSON.stringify(seen);
    assert.ok(has('top.txt', 'create'), got);
    assert.ok(has('top.txt', 'write'), got);
    assert.ok(has('old/deep/d.txt', 'create'), got);
    assert.ok(has('old/deep/d.txt', 'write'), got);
    assert.ok(has('new', 'create'), got);
    assert.ok(has('new/n.txt', 'create'), got);
    assert.ok(has('new/n.txt', 'write'), got);
    assert.ok(has('old/deep/d.txt', 'remove'), got);
  } finally {
    await w.stop();
  }
  // not recursive: the directory's own entries only
  const flat = [];
  const w2 = await sbx.files.watchDir('/tmp/rw', (e) => flat.push(e));
  try {
    await sbx.commands.run('echo deep > /tmp/rw/old/deep/e.txt');
    await sbx.commands.run('echo top > /tmp/rw/top2.txt');
    for (let i = 0; i < 40 && !flat.some((e) => e.name === 'top2.txt'); i++) {
      await sleep(250);
    }
    assert.ok(flat.some((e) => e.name === 'top2.txt'), JSON.stringify(flat));
    assert.ok(!flat.some((e) => e.name.includes('/') || e.name === 'e.txt'),
      JSON.stringify(flat));
  } finally {
    await w2.stop();
  }
});

test('file metadata', async () => {
  const meta = { owner: 'team a/b+c@d:e', rev: '2', empty: '' };
  const info = await sbx.files.write('/tmp/meta/a.txt', 'with metadata',
    { metadata: meta });
  assert.deepEqual(info.metadata, meta);
  assert.deepEqual((await sbx.files.getInfo('/tmp/meta/a.txt')).metadata, meta);
  await sbx.files.write('/tmp/meta/plain.txt', 'without');
  const listed = await sbx.files.list('/tmp/meta');
  const byName = Object.fromEntries(listed.map((e) => [e.name, e]));
  assert.deepEqual(byName['a.txt'].metadata, meta);
  assert.equal(byName['plain.txt'].metadata, undefined);
  assert.equal(await sbx.files.read('/tmp/meta/a.txt'), 'with metadata');
  // several files in one call: each keeps it
  const two = await sbx.files.write([
    { path: '/tmp/meta/b.txt', data: 'b' }, { path: '/tmp/meta/c.txt', data: 'c' },
  ], { metadata: { batch: 'yes' } });
  assert.equal(two.length, 2);
  for (const e of two) assert.deepEqual(e.metadata, { batch: 'yes' });
  assert.deepEqual((await sbx.files.getInfo('/tmp/meta/c.txt')).metadata,
    { batch: 'yes' });
  // written again without metadata: the new file has none
  await sbx.files.write('/tmp/meta/a.txt', 'again');
  assert.equal((await sbx.files.getInfo('/tmp/meta/a.txt')).metadata, undefined);
  // a value that is not printable ASCII: refused, nothing written
  const r = await rawUpload('/tmp/meta/bad.txt', 'x', { 'X-Metadata-k': 'caf\u00e9' });
  assert.equal(r.status, 400, r.text);
  assert.match(r.text, /metadata/);
  assert.equal(await sbx.files.exists('/tmp/meta/bad.txt'), false);
});

test('signed uploadUrl and downloadUrl', async () => {
  const up = await sbx.uploadUrl('/tmp/signed/up.txt');
  assert.match(new URL(up).searchParams.get('signature'), /^v1_/);
  // a plain client: neither the access token nor the sandbox's id
  const form = () => {
    const f = new FormData();
    f.append('file', new Blob(['via a signed url']), 'up.txt');
    return f;
  };
  const r = await fetch(up, { method: 'POST', body: form() });
  assert.equal(r.status, 200, await r.text());
  assert.equal(await sbx.files.read('/tmp/signed/up.txt'), 'via a signed url');
  const down = await sbx.downloadUrl('/tmp/signed/up.txt',
    { useSignatureExpiration: 120 });
  assert.ok(new URL(down).searchParams.get('signature_expiration'));
  const d = await fetch(down);
  assert.equal(d.status, 200);
  assert.equal(await d.text(), 'via a signed url');
  // a read URL does not write; another path, or another signature, is refused
  const w = await fetch(down, { method: 'POST', body: form() });
  assert.equal(w.status, 401, await w.text());
  const other = new URL(down);
  other.searchParams.set('path', '/etc/shadow');
  const o = await fetch(other);
  assert.equal(o.status, 401, await o.text());
  const forged = new URL(up);
  forged.searchParams.set('signature', `v1_${'A'.repeat(43)}`);
  const f = await fetch(forged, { method: 'POST', body: form() });
  assert.equal(f.status, 401, await f.text());
  // past its expiration
  const old = await sbx.downloadUrl('/tmp/signed/up.txt',
    { useSignatureExpiration: -5 });
  const e = await fetch(old);
  assert.equal(e.status, 401);
  assert.match(await e.text(), /expired/);
  // nothing of the refused ones was written
  assert.equal(await sbx.files.read('/tmp/signed/up.txt'), 'via a signed url');
});
