// SPDX-License-Identifier: GPL-2.0
//
// sdk_user_test.mjs: E2B's default user, through the unmodified SDK.  A
// call naming no user runs commands and writes files as "user" (uid 1000,
// home /home/user, the working directory and what relative paths are
// under), root only when asked for ({user: 'root'}), an unknown user is
// refused; and the default root file system holds what E2B's users expect
// of it: python3 with pip and venv, curl, git, passwordless sudo.
// Run by run_sdk_test.sh like sdk_test.mjs (CUBE_TEMPLATE, default "base").
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, AuthenticationError } from 'e2b';

const template = process.env.CUBE_TEMPLATE || 'base';
const made = new Set();
let sbx;

after(async () => {
  for (const id of made) {
    try { await Sandbox.kill(id); } catch { /* already gone */ }
  }
});

async function run(cmd, opts = {}) {
  return (await sbx.commands.run(cmd, opts)).stdout;
}

test('a sandbox for the user tests', async () => {
  sbx = await Sandbox.create(template, { timeoutMs: 600_000 });
  made.add(sbx.sandboxId);
  assert.equal(await sbx.isRunning(), true);
});

test('commands run as user in /home/user unless told', async () => {
  assert.equal(await run('whoami'), 'user\n');
  assert.equal(await run('pwd'), '/home/user\n');
  assert.equal(await run('id -u; id -g; echo "$HOME"'),
    '1000\n1000\n/home/user\n');
  assert.equal(await run('getent passwd user | cut -d: -f6,7'),
    '/home/user:/bin/bash\n');
});

test("{user: 'root'} runs as root in /root", async () => {
  assert.equal(await run('whoami', { user: 'root' }), 'root\n');
  assert.equal(await run('pwd; echo "$HOME"', { user: 'root' }),
    '/root\n/root\n');
  assert.equal(await run('whoami', { user: 'user' }), 'user\n');
});

test('a relative cwd is under the home', async () => {
  assert.equal(await sbx.files.makeDir('work'), true);
  assert.equal(await run('pwd', { cwd: 'work' }), '/home/user/work\n');
  assert.equal(await run('stat -c %U /home/user/work'), 'user\n');
});

test('files.write of a relative path lands in /home/user, owned by user',
  async () => {
    const info = await sbx.files.write('a.txt', 'from the sdk\n');
    assert.equal(info.path, '/home/user/a.txt');
    assert.equal(await run('cat /home/user/a.txt'), 'from the sdk\n');
    assert.equal(await run('stat -c %U:%G /home/user/a.txt'), 'user:user\n');
    assert.equal(await sbx.files.read('a.txt'), 'from the sdk\n');
    assert.equal(await sbx.files.read('/home/user/a.txt'), 'from the sdk\n');
    // the user can change what it was given
    assert.equal(await run('echo more >> a.txt && tail -n 1 a.txt'), 'more\n');
    const names = (await sbx.files.list('.')).map((e) => e.name);
    assert.ok(names.includes('a.txt'), JSON.stringify(names));
  });

test('directories files.write makes are the user\'s too', async () => {
  await sbx.files.write('/tmp/owned/sub/b.txt', 'b');
  assert.equal(await run(
    'stat -c %U /tmp/owned /tmp/owned/sub /tmp/owned/sub/b.txt'),
  'user\nuser\nuser\n');
  // an existing file written again becomes the writer's
  await sbx.commands.run('echo r > /tmp/by-root.txt', { user: 'root' });
  assert.equal(await run('stat -c %U /tmp/by-root.txt'), 'root\n');
  await sbx.files.write('/tmp/by-root.txt', 'now mine');
  assert.equal(await run('stat -c %U /tmp/by-root.txt; cat /tmp/by-root.txt'),
    'user\nnow mine');
});

test("files as {user: 'root'}: /root, owned by root", async () => {
  const info = await sbx.files.write('r.txt', 'root\n', { user: 'root' });
  assert.equal(info.path, '/root/r.txt');
  assert.equal(await run('stat -c %U /root/r.txt', { user: 'root' }),
    'root\n');
  assert.equal(await sbx.files.read('r.txt', { user: 'root' }), 'root\n');
  assert.equal(await sbx.files.exists('r.txt'), false);
});

test('an unknown user is refused, nothing runs or is written', async () => {
  await assert.rejects(sbx.commands.run('touch /tmp/ghost-ran', { user: 'ghost' }),
    (e) => e instanceof AuthenticationError && /'ghost'/.test(e.message),
  );
  await assert.rejects(sbx.files.write('/tmp/ghost.txt', 'x', { user: 'ghost' }),
    (e) => /ghost/.test(e.message));
  assert.equal(await sbx.files.exists('/tmp/ghost-ran'), false);
  assert.equal(await sbx.files.exists('/tmp/ghost.txt'), false);
});

test('python3 with http.server, pip and venv', async () => {
  const r = await sbx.commands.run('python3 -m http.server --help');
  assert.equal(r.exitCode, 0);
  assert.match(r.stdout, /usage: .*server/);
  assert.match(await run('python3 -m pip --version'), /^pip [0-9]/);
  const v = await run('python3 -m venv /tmp/v && /tmp/v/bin/pip --version',
    { timeoutMs: 120_000 });
  assert.match(v, /^pip [0-9].*\/tmp\/v\//);
});

test('curl, git and ca-certificates are there', async () => {
  assert.match(await run('curl --version'), /^curl [0-9]/);
  assert.match(await run('git --version'), /^git version [0-9]/);
  assert.equal(await run('test -s /etc/ssl/certs/ca-certificates.crt && echo ok'),
    'ok\n');
});

test('the user has passwordless sudo', async () => {
  const r = await sbx.commands.run('sudo -n true');
  assert.equal(r.exitCode, 0);
  assert.equal(await run('sudo -n whoami'), 'root\n');
});
