// SPDX-License-Identifier: GPL-2.0
//
// sdk_disk_test.mjs: a sandbox of a template with a writable disk
// (CUBE_DISK_TEMPLATE, default "base-disk": e2b_serve.sh builds it with
// --disk 128M) through the unmodified E2B SDK (npm "e2b"), against cubed.
// Its root is the disk's size, getMetrics() reports the disk and what the
// guest wrote to it, what it wrote is all there after pause and resume,
// and a full disk fails the command in the sandbox while the sandbox and
// cubed go on.  Run by run_sdk_test.sh (see sdk_pause_test.mjs for the
// environment); the sandbox it makes is killed before it ends.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, SandboxNotFoundError } from 'e2b';

const template = process.env.CUBE_DISK_TEMPLATE || 'base-disk';
const MiB = 1 << 20;
const DISK = 128 * MiB;
const made = new Set();
let sbx, sum;

after(async () => {
  for (const id of made) {
    try { await Sandbox.kill(id); } catch { /* already gone */ }
  }
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// KiB of the guest's root file system
async function rootKiB(s) {
  const r = await s.commands.run("df -Pk / | awk 'NR == 2 { print $2 }'");
  return Number(r.stdout.trim());
}

// the newest metrics sample that satisfies ok(), waiting up to secs
async function sampleWhere(s, ok, secs) {
  let last;
  for (let i = 0; i < secs; i++) {
    const m = await s.getMetrics();
    last = m.at(-1);
    if (last && ok(last)) return last;
    await sleep(1000);
  }
  return last;
}

test("the sandbox's root is its template's disk", async (t) => {
  sbx = await Sandbox.create(template, { timeoutMs: 600_000 });
  made.add(sbx.sandboxId);
  const kib = await rootKiB(sbx);
  assert.ok(kib > 100_000 && kib <= DISK / 1024, `df says ${kib} KiB`);
  const s = await sampleWhere(sbx, (x) => x.diskTotal > 0, 15);
  t.diagnostic(`metrics ${JSON.stringify(s)}`);
  assert.equal(s?.diskTotal, DISK);
});

test('what the guest writes is on the disk and in the metrics', async (t) => {
  const r = await sbx.commands.run(
    'head -c 16777216 /dev/urandom > /home/user/big && sync && md5sum < /home/user/big');
  sum = r.stdout.trim();
  assert.match(sum, /^[0-9a-f]{32}/);
  await sbx.files.write('/home/user/note.txt', 'on the disk\n');
  // the host file holds what was written: a sample after the write says so
  const s = await sampleWhere(sbx, (x) => x.diskUsed >= 16 * MiB, 20);
  t.diagnostic(`after 16 MiB: ${JSON.stringify(s)}`);
  assert.ok(s && s.diskUsed >= 16 * MiB && s.diskUsed <= DISK,
    `diskUsed ${s?.diskUsed}`);
});

test('pause and resume keep everything the disk holds', async () => {
  assert.equal(await sbx.pause(), true);
  const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 600_000 });
  assert.equal(again.sandboxId, sbx.sandboxId);
  sbx = again;
  assert.equal((await sbx.commands.run('md5sum < /home/user/big')).stdout.trim(), sum);
  assert.equal(await sbx.files.read('/home/user/note.txt'), 'on the disk\n');
  const kib = await rootKiB(sbx);
  assert.ok(kib > 100_000 && kib <= DISK / 1024, `df says ${kib} KiB`);
});

test('a full disk fails in the sandbox; the sandbox goes on', async () => {
  const r = await sbx.commands.run(
    'dd if=/dev/zero of=/home/user/fill bs=1M 2>&1; echo "status $?"; sync');
  assert.match(r.stdout, /No space left on device/);
  assert.match(r.stdout, /status 1/);
  await sbx.commands.run('rm -f /home/user/fill');
  assert.equal((await sbx.commands.run('md5sum < /home/user/big')).stdout.trim(), sum);
  await sbx.files.write('/home/user/after.txt', 'room again\n');
  assert.equal(await sbx.files.read('/home/user/after.txt'), 'room again\n');
});

test('killed, the sandbox and its disk are gone', async () => {
  assert.equal(await Sandbox.kill(sbx.sandboxId), true);
  made.delete(sbx.sandboxId);
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId),
    (e) => e instanceof SandboxNotFoundError);
});
