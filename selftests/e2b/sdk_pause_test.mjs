// SPDX-License-Identifier: GPL-2.0
//
// sdk_pause_test.mjs: pause, resume, the lifecycle (onTimeout 'pause',
// autoResume) and metrics through the unmodified E2B SDK (npm "e2b"),
// against cubed.  Run by run_sdk_test.sh from a folder
// where "e2b" is installed, with
//   E2B_API_URL=http://127.0.0.1:<api port>
//   E2B_SANDBOX_URL=http://127.0.0.1:<envd port>
//   E2B_API_KEY=<a key cubed accepts>
//   CUBE_TEMPLATE=<template name>   (default "base")
// Every test asserts what the SDK returns or throws; the sandboxes it makes
// are killed before it ends.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Sandbox, SandboxNotFoundError, SandboxError, TimeoutError, CommandExitError,
} from 'e2b';

const template = process.env.CUBE_TEMPLATE || 'base';
const made = new Set();
let sbx;
// the auto-paused sandbox and the command it ran before its pause
let sbxAuto, bgPid;

after(async () => {
  for (const id of made) {
    try { await Sandbox.kill(id); } catch { /* already gone */ }
  }
});

async function stateOf(id) {
  const items = await Sandbox.list({ query: { state: ['running', 'paused'] } })
    .nextItems();
  const it = items.find((s) => s.sandboxId === id);
  return it ? it.state : undefined;
}

test('getMetrics() reports the sandbox size and real use', async (t) => {
  sbx = await Sandbox.create(template, { timeoutMs: 600_000 });
  made.add(sbx.sandboxId);
  const info = await sbx.getInfo();
  const t0 = Math.floor(Date.now() / 1000) * 1000;
  await sbx.commands.run('i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done');
  // the samples of its life so far (one every 5 s), oldest first
  const m = await sbx.getMetrics();
  assert.ok(m.length >= 1, 'no sample');
  const s = m[m.length - 1];
  t.diagnostic(`metrics ${JSON.stringify(s)}`);
  assert.equal(s.cpuCount, info.cpuCount);
  assert.equal(s.memTotal, info.memoryMB * 1024 * 1024);
  // (cubed clamps memUsed to memTotal and cpuUsedPct to 100 itself: those
  // upper bounds are not asserted here, they could not fail)
  assert.ok(s.memUsed > 0, `memUsed ${s.memUsed}`);
  assert.ok(Number.isFinite(s.cpuUsedPct) && s.cpuUsedPct >= 0, `cpu ${s.cpuUsedPct}`);
  assert.ok(s.diskUsed <= s.diskTotal);
  assert.ok(s.timestamp instanceof Date);
  assert.ok(Math.abs(s.timestamp.getTime() - Date.now()) < 120_000);
  // What the product does not clamp.  The VMM ran the loop above: some CPU.
  // (a sample covers the time since the one before it)
  assert.ok(m.some((x) => x.timestamp.getTime() >= t0 && x.cpuUsedPct > 0),
    `cpu ${m.map((x) => x.cpuUsedPct)} after a busy loop`);
  // The guest writes 64 MiB it never touched since its restore: the pages
  // it holds grow with them, by far more than noise, and stay within its
  // size; the newest sample is not older than the first.
  await sbx.commands.run(
    'python3 -c "b = bytes([1]) * (64 << 20); print(len(b))"');
  const s2 = (await sbx.getMetrics()).at(-1);
  t.diagnostic(`after 64 MiB: ${JSON.stringify(s2)}`);
  const grew = s2.memUsed - s.memUsed;
  assert.ok(grew >= 32 << 20, `memUsed grew by ${grew} bytes for 64 MiB written`);
  assert.equal(s2.memTotal, s.memTotal);
  assert.ok(s2.timestamp.getTime() >= s.timestamp.getTime(),
    `timestamps ${s.timestamp.toISOString()} then ${s2.timestamp.toISOString()}`);
});

test('pause() snapshots the sandbox; it is listed and reported paused', async (t) => {
  await sbx.files.write('/root/before-pause.txt', 'kept\n');
  await sbx.commands.run('echo in-memory > /tmp/mem.txt');
  const t0 = Date.now();
  assert.equal(await sbx.pause(), true);
  t.diagnostic(`pause took ${Date.now() - t0} ms`);
  assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'paused');
  assert.equal(await stateOf(sbx.sandboxId), 'paused');
  const running = await Sandbox.list({ query: { state: ['running'] } }).nextItems();
  assert.ok(!running.some((s) => s.sandboxId === sbx.sandboxId));
  // a paused sandbox has no samples
  assert.deepEqual(await Sandbox.getMetrics(sbx.sandboxId), []);
});

test('pausing a paused sandbox returns false', async () => {
  assert.equal(await Sandbox.pause(sbx.sandboxId), false);
});

test('Sandbox.connect() resumes it under the same id with its files', async (t) => {
  const t0 = Date.now();
  const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 600_000 });
  t.diagnostic(`resume took ${Date.now() - t0} ms`);
  assert.equal(again.sandboxId, sbx.sandboxId);
  assert.equal((await again.getInfo()).state, 'running');
  assert.equal(await again.files.read('/root/before-pause.txt'), 'kept\n');
  const r = await again.commands.run('cat /tmp/mem.txt');
  assert.equal(r.stdout, 'in-memory\n');
  assert.equal(await stateOf(sbx.sandboxId), 'running');
  sbx = again;
});

test('a resumed sandbox pauses and resumes again', async () => {
  await sbx.commands.run('echo second > /tmp/second.txt');
  assert.equal(await sbx.pause(), true);
  await sbx.connect();
  const r = await sbx.commands.run('cat /tmp/mem.txt /tmp/second.txt');
  assert.equal(r.stdout, 'in-memory\nsecond\n');
});

test('unknown ids: pause and connect throw SandboxNotFoundError', async () => {
  await assert.rejects(Sandbox.pause('999999999'),
    (e) => e instanceof SandboxNotFoundError);
  await assert.rejects(Sandbox.connect('999999999'),
    (e) => e instanceof SandboxNotFoundError);
});

test('a paused sandbox can be killed; then it is gone', async () => {
  const p = await Sandbox.create(template, { timeoutMs: 600_000 });
  made.add(p.sandboxId);
  assert.equal(await p.pause(), true);
  assert.equal(await Sandbox.kill(p.sandboxId), true);
  made.delete(p.sandboxId);
  assert.equal(await stateOf(p.sandboxId), undefined);
  await assert.rejects(Sandbox.getInfo(p.sandboxId),
    (e) => e instanceof SandboxNotFoundError);
  await assert.rejects(Sandbox.connect(p.sandboxId),
    (e) => e instanceof SandboxNotFoundError);
});

test('the timeout still ends a paused sandbox', async () => {
  const p = await Sandbox.create(template, { timeoutMs: 600_000 });
  made.add(p.sandboxId);
  assert.equal(await p.pause(), true);
  await Sandbox.setTimeout(p.sandboxId, 2_000);
  let state = 'paused';
  for (let i = 0; i < 30 && state; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    state = await stateOf(p.sandboxId);
  }
  assert.equal(state, undefined);
  made.delete(p.sandboxId);
});

// poll (1 s apart, up to @secs) until @id's state is @want (undefined: gone)
async function waitState(id, want, secs = 180) {
  let state;
  for (let i = 0; i < secs; i++) {
    state = await stateOf(id);
    if (state === want)
      return state;
    await new Promise((r) => setTimeout(r, 1000));
  }
  return state;
}

test('onTimeout "pause": the timeout pauses it, state kept; connect resumes it', async (t) => {
  // a short timeout: what runs below takes a few seconds
  const p = await Sandbox.create(template, {
    timeoutMs: 30_000, lifecycle: { onTimeout: 'pause' },
  });
  made.add(p.sandboxId);
  const info = await p.getInfo();
  assert.deepEqual(info.lifecycle, { onTimeout: 'pause', autoResume: false });
  await p.files.write('/root/auto.txt', 'auto-paused\n');
  await p.commands.run('echo in-memory > /tmp/auto-mem.txt');
  const bg = await p.commands.run('sleep 3000', { background: true });
  const t0 = Date.now();
  assert.equal(await waitState(p.sandboxId, 'paused'), 'paused');
  t.diagnostic(`paused ${Date.now() - t0} ms after the work`);
  assert.equal((await Sandbox.getInfo(p.sandboxId)).state, 'paused');
  // envd answers what E2B's proxy answers for a sandbox not running
  assert.equal(await p.isRunning(), false);
  await assert.rejects(p.files.read('/root/auto.txt'),
    (e) => e instanceof TimeoutError);
  // still paused: nothing resumed it
  assert.equal(await stateOf(p.sandboxId), 'paused');
  // kept past its end until resumed or killed
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(await stateOf(p.sandboxId), 'paused');

  const again = await Sandbox.connect(p.sandboxId, { timeoutMs: 600_000 });
  assert.equal(await again.isRunning(), true);
  const after = await again.getInfo();
  assert.equal(after.state, 'running');
  assert.deepEqual(after.lifecycle, { onTimeout: 'pause', autoResume: false });
  // the new timeout is the one connect gave, not the past end
  assert.ok(after.endAt.getTime() > Date.now() + 500_000,
    `endAt ${after.endAt.toISOString()}`);
  assert.equal(await again.files.read('/root/auto.txt'), 'auto-paused\n');
  assert.equal((await again.commands.run('cat /tmp/auto-mem.txt')).stdout,
    'in-memory\n');
  t.diagnostic(`background pid ${bg.pid}`);
  sbxAuto = again;
  bgPid = bg.pid;
});

// poll (0.2 s apart, up to @ms) until @cond() holds; returns whether it did
async function until(cond, ms = 60_000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end)
      return false;
    await new Promise((r) => setTimeout(r, 200));
  }
  return true;
}

test('a command started before an automatic pause is listed, reachable and killed after the resume', async () => {
  const procs = await sbxAuto.commands.list();
  const p = procs.find((x) => x.pid === bgPid);
  assert.ok(p, `pid ${bgPid} listed among ${JSON.stringify(procs)}`);
  assert.ok(p.args.some((a) => a.includes('sleep 3000')),
    `args ${JSON.stringify(p.args)}`);
  const h = await sbxAuto.commands.connect(bgPid);
  assert.equal(h.pid, bgPid);
  assert.equal(await h.kill(), true);
  await assert.rejects(h.wait(), (e) => e instanceof CommandExitError);
  assert.ok(await until(async () =>
    !(await sbxAuto.commands.list()).some((x) => x.pid === bgPid)),
  'gone from the list after kill');
});

test('a background command outlives pause() and connect(): listed, streams new output, killed', async (t) => {
  const s = await Sandbox.create(template, { timeoutMs: 600_000 });
  made.add(s.sandboxId);
  const before = [];
  const bg = await s.commands.run(
    'i=0; while true; do echo "n$i"; i=$((i+1)); sleep 0.2; done',
    { background: true, onStdout: (d) => before.push(d) });
  assert.ok(await until(() => before.join('').includes('n2\n')),
    `output before the pause: ${before.join('')}`);
  assert.equal(await s.pause(), true);
  const again = await Sandbox.connect(s.sandboxId, { timeoutMs: 600_000 });
  const procs = await again.commands.list();
  assert.ok(procs.some((x) => x.pid === bg.pid),
    `pid ${bg.pid} listed among ${JSON.stringify(procs)}`);
  // it counts on from where it was: lines it prints after the connect
  const seen = [];
  const h = await again.commands.connect(bg.pid, { onStdout: (d) => seen.push(d) });
  assert.equal(h.pid, bg.pid);
  const last = Number(before.join('').trim().split('\n').at(-1).slice(1));
  assert.ok(await until(() => {
    const nums = seen.join('').split('\n').filter((l) => /^n\d+$/.test(l))
      .map((l) => Number(l.slice(1)));
    return nums.length >= 3 && nums.every((n, i) => i === 0 || n === nums[i - 1] + 1);
  }), `after the resume: ${seen.join('')}`);
  const firstAfter = Number(seen.join('').split('\n').find((l) => /^n\d+$/.test(l)).slice(1));
  t.diagnostic(`last line before the pause n${last}, first after the connect n${firstAfter}`);
  assert.ok(firstAfter > last, `n${firstAfter} after n${last}`);
  assert.equal(await h.kill(), true);
  await assert.rejects(h.wait(), (e) => e instanceof CommandExitError);
  assert.ok(await until(async () =>
    !(await again.commands.list()).some((x) => x.pid === bg.pid)),
  'gone from the list after kill');
  await again.kill();
  made.delete(s.sandboxId);
});

test('a command that ends after the resume reports its real exit code', async () => {
  const s = await Sandbox.create(template, { timeoutMs: 600_000 });
  made.add(s.sandboxId);
  const bg = await s.commands.run(
    'echo waiting; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo finishing; exit 3',
    { background: true });
  assert.equal(await s.pause(), true);
  const again = await Sandbox.connect(s.sandboxId, { timeoutMs: 600_000 });
  const out = [];
  const h = await again.commands.connect(bg.pid, { onStdout: (d) => out.push(d) });
  await again.files.write('/tmp/go', '');
  const r = await h.wait().catch((e) => e);
  assert.ok(r instanceof CommandExitError, `wait() gave ${r}`);
  assert.equal(r.exitCode, 3);
  assert.ok(out.join('').includes('finishing\n'), `output ${out.join('')}`);
  await again.kill();
  made.delete(s.sandboxId);
});

test('a paused sandbox with autoResume is resumed by the next envd request', async (t) => {
  const p = await Sandbox.create(template, {
    timeoutMs: 30_000, lifecycle: { onTimeout: 'pause', autoResume: true },
  });
  made.add(p.sandboxId);
  assert.deepEqual((await p.getInfo()).lifecycle,
    { onTimeout: 'pause', autoResume: true });
  await p.files.write('/root/resume.txt', 'on-traffic\n');
  assert.equal(await waitState(p.sandboxId, 'paused'), 'paused');
  const t0 = Date.now();
  // the same handle, no connect: the request resumes it
  assert.equal(await p.files.read('/root/resume.txt'), 'on-traffic\n');
  t.diagnostic(`resumed by a read in ${Date.now() - t0} ms`);
  assert.equal(await stateOf(p.sandboxId), 'running');
  assert.equal((await p.commands.run('echo up')).stdout, 'up\n');
  await p.kill();
  made.delete(p.sandboxId);
});

test('without onTimeout "pause" the timeout kills it', async () => {
  const p = await Sandbox.create(template, { timeoutMs: 10_000 });
  made.add(p.sandboxId);
  assert.deepEqual((await p.getInfo()).lifecycle,
    { onTimeout: 'kill', autoResume: false });
  assert.equal(await waitState(p.sandboxId, undefined, 120), undefined);
  await assert.rejects(Sandbox.getInfo(p.sandboxId),
    (e) => e instanceof SandboxNotFoundError);
  assert.equal(await p.isRunning(), false);
  made.delete(p.sandboxId);
});

test('lifecycle values the server cannot honour are refused', async () => {
  // a filesystem-only pause: the memory is always kept here
  await assert.rejects(Sandbox.create(template, {
    timeoutMs: 30_000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false } },
  }), (e) => e instanceof SandboxError && e.statusCode === 400 &&
    /autoPauseMemory/.test(e.message));
});

test('createSnapshot() makes a template new sandboxes start from', async () => {
  const name = `sdk-snap-${process.pid}`;
  await sbx.commands.run('echo from-snapshot > /tmp/snap.txt');
  const snap = await sbx.createSnapshot({ name });
  assert.equal(snap.snapshotId, name);
  assert.deepEqual(snap.names, [name]);
  // the source runs on
  assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n');
  const listed = await Sandbox.listSnapshots({ sandboxId: sbx.sandboxId })
    .nextItems();
  assert.ok(listed.some((x) => x.snapshotId === name), 'listed');
  const other = await Sandbox.listSnapshots({ sandboxId: '999999999' })
    .nextItems();
  assert.ok(!other.some((x) => x.snapshotId === name), 'filtered');
  const child = await Sandbox.create(name, { timeoutMs: 600_000 });
  made.add(child.sandboxId);
  assert.notEqual(child.sandboxId, sbx.sandboxId);
  assert.equal((await child.commands.run('cat /tmp/snap.txt')).stdout,
    'from-snapshot\n');
  await child.kill();
  made.delete(child.sandboxId);
  // a name taken is refused
  await assert.rejects(sbx.createSnapshot({ name }),
    (e) => e instanceof SandboxError && e.statusCode === 409);
});

test('the test killed what it made', async () => {
  await sbx.kill();
  made.delete(sbx.sandboxId);
  if (sbxAuto) {
    await sbxAuto.kill();
    made.delete(sbxAuto.sandboxId);
  }
  assert.equal(await stateOf(sbx.sandboxId), undefined);
});
