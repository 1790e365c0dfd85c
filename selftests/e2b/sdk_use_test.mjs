// SPDX-License-Identifier: GPL-2.0
//
// sdk_use_test.mjs: SDK calls as E2B users make them, answered as E2B
// answers them, through the unmodified E2B SDK (npm "e2b").  Run by
// run_sdk_test.sh from a folder where "e2b" is installed, with
//   E2B_API_URL=http://127.0.0.1:<api port>
//   E2B_SANDBOX_URL=http://127.0.0.1:<envd port>
//   E2B_API_KEY=<a key cubed accepts>
//   CUBE_TEMPLATE=<template name>   (default "base")
// Covered: files.write of 1 to 4 bytes and of several files in one call
// (one entry per file, each file's bytes); Sandbox.list metadata filters
// whose values hold spaces, '/', '+', '@' and ':', and paging with limit
// and nextToken in both orders; commands.run with timeoutMs ends the
// command in the sandbox, not only the client's wait.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, TimeoutError } from 'e2b';

const template = process.env.CUBE_TEMPLATE || 'base';
const made = [];
// one value per run: other sandboxes of the run never match it
const run = `use ${process.pid}/${Date.now()}+x@y:z`;
let sbx;

after(async () => {
  for (const id of made) {
    try { await Sandbox.kill(id); } catch { /* already gone */ }
  }
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('a sandbox with metadata values holding " /+@:"', async () => {
  sbx = await Sandbox.create(template, {
    timeoutMs: 600_000, metadata: { 'cube-use': run, 'cube-n': '0' },
  });
  made.push(sbx.sandboxId);
  const info = await sbx.getInfo();
  assert.equal(info.metadata['cube-use'], run);
});

test('files.write of 1 to 4 bytes answers one entry and writes the bytes',
  async () => {
    for (let n = 1; n <= 4; n++) {
      const path = `/tmp/use/one-${n}`;
      const data = 'abcd'.slice(0, n);
      const info = await sbx.files.write(path, data);
      assert.ok(!Array.isArray(info), `${n} bytes: ${JSON.stringify(info)}`);
      assert.equal(info.path, path);
      assert.equal(await sbx.files.read(path), data);
    }
  });

test('files.write of several files answers one entry per file, in order',
  async () => {
    const files = [
      { path: '/tmp/use/many/a', data: 'A' },
      { path: '/tmp/use/many/b', data: 'BC' },
      { path: '/tmp/use/many/c', data: 'DEF' },
      { path: '/tmp/use/many/d', data: 'GHIJ' },
      { path: '/tmp/use/many/e', data: 'x'.repeat(70_000) },
    ];
    const infos = await sbx.files.write(files);
    assert.deepEqual(infos.map((i) => i.path), files.map((f) => f.path));
    for (const f of files)
      assert.equal(await sbx.files.read(f.path), f.data);
    const listed = await sbx.files.list('/tmp/use/many');
    assert.deepEqual(listed.map((e) => e.name).sort(), ['a', 'b', 'c', 'd', 'e']);
  });

test('Sandbox.list filters on metadata values with spaces, /, +, @, :',
  async () => {
    const items = await Sandbox.list({ query: { metadata: { 'cube-use': run } } })
      .nextItems();
    assert.deepEqual(items.map((s) => s.sandboxId), [sbx.sandboxId]);
    assert.equal(items[0].metadata['cube-use'], run);
    const both = await Sandbox.list({
      query: { metadata: { 'cube-use': run, 'cube-n': '0' } },
    }).nextItems();
    assert.equal(both.length, 1);
    for (const other of [run.split(' ')[0], `${run} `, run.replace('+', ' ')]) {
      const none = await Sandbox.list({ query: { metadata: { 'cube-use': other } } })
        .nextItems();
      assert.equal(none.length, 0, `'${other}' matched`);
    }
  });

test('Sandbox.list pages with limit and nextToken, newest first or oldest',
  async () => {
    for (const n of ['1', '2']) {
      const s = await Sandbox.create(template, {
        timeoutMs: 600_000, metadata: { 'cube-use': run, 'cube-n': n },
      });
      made.push(s.sandboxId);
    }
    for (const order of ['desc', 'asc']) {
      const pager = Sandbox.list({
        query: { metadata: { 'cube-use': run } }, limit: 1, order,
      });
      const seen = [];
      while (pager.hasNext) {
        const page = await pager.nextItems();
        assert.equal(page.length, 1, `${order}: page ${seen.length + 1}`);
        seen.push(page[0].sandboxId);
        assert.ok(seen.length <= 3, `${order}: pages never end`);
      }
      const want = order === 'asc' ? made : [...made].reverse();
      assert.deepEqual(seen, want, order);
    }
    const two = Sandbox.list({ query: { metadata: { 'cube-use': run } }, limit: 2 });
    assert.equal((await two.nextItems()).length, 2);
    assert.equal(two.hasNext, true);
    const rest = Sandbox.list({
      query: { metadata: { 'cube-use': run } }, limit: 2, nextToken: two.nextToken,
    });
    assert.deepEqual((await rest.nextItems()).map((s) => s.sandboxId), [made[0]]);
    assert.equal(rest.hasNext, false);
  });

test('commands.run with timeoutMs ends the command in the sandbox too',
  async () => {
    const t0 = Date.now();
    await assert.rejects(
      sbx.commands.run('sleep 8; touch /tmp/use/late', { timeoutMs: 3_000 }),
      (e) => e instanceof TimeoutError);
    assert.ok(Date.now() - t0 < 8_000, 'the client waited for the command');
    // past the point where it would have written, had it lived on
    await sleep(10_000);
    assert.equal(await sbx.files.exists('/tmp/use/late'), false);
    const procs = await sbx.commands.list();
    assert.ok(!procs.some((p) => p.args.join(' ').includes('sleep 8')),
      JSON.stringify(procs));
    // within its time a command ends as usual
    const r = await sbx.commands.run('echo in-time', { timeoutMs: 60_000 });
    assert.equal(r.stdout, 'in-time\n');
  });
