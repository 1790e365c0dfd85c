// SPDX-License-Identifier: GPL-2.0
//
// sdk_code_test.mjs: runCode through the unmodified @e2b/code-interpreter
// SDK against cubed, as every E2B example starts: Sandbox.create() (the
// SDK's default template, code-interpreter-v1, which e2b_serve.sh builds)
// then sandbox.runCode().  Run by run_sdk_test.sh with E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY set; the SDK sends runCode and the
// contexts calls to E2B_SANDBOX_URL with E2b-Sandbox-Port: 49999, and cubed
// passes them to the sandbox's code interpreter service.
//
// Covered: the first runCode of a restored sandbox (its time is printed),
// state across calls, display() and the last value as results with their
// MIME bundles, a matplotlib PNG, an exception with its traceback, a
// timeout that leaves the context usable, two contexts isolated from each
// other (list, restart, remove), envs, bash, an unsupported language.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Sandbox, TimeoutError, SandboxError, NotFoundError, InvalidArgumentError,
} from '@e2b/code-interpreter';

const made = new Set();
let sbx;
// a new context starts a kernel: slow under emulation
const slow = { requestTimeoutMs: 600_000 };

after(async () => {
  for (const id of made) {
    try { await Sandbox.kill(id); } catch { /* already gone */ }
  }
});

test('Sandbox.create() then runCode("print(2 + 2)")', async () => {
  sbx = await Sandbox.create({ timeoutMs: 900_000 });
  made.add(sbx.sandboxId);
  const t0 = Date.now();
  const ex = await sbx.runCode('print(2 + 2)');
  const ms = Date.now() - t0;
  console.log(`# first runCode after the restore: ${ms} ms`);
  assert.deepEqual(ex.logs.stdout, ['4\n']);
  assert.deepEqual(ex.logs.stderr, []);
  assert.equal(ex.error, undefined);
  assert.equal(ex.executionCount, 1);
  const t1 = Date.now();
  await sbx.runCode('1');
  console.log(`# second runCode: ${Date.now() - t1} ms`);
});

test('state persists between calls; the last value is the main result', async () => {
  await sbx.runCode('x = 41');
  const ex = await sbx.runCode('x + 1');
  assert.equal(ex.text, '42');
  assert.equal(ex.results.length, 1);
  assert.equal(ex.results[0].isMainResult, true);
  assert.ok(ex.executionCount >= 3);
});

test('display() results and MIME bundles', async () => {
  const seen = [];
  const ex = await sbx.runCode(
    'from IPython.display import display, HTML\n' +
    'display(HTML("<b>hi</b>"))\n' +
    'import pandas as pd\n' +
    'pd.DataFrame({"a": [1, 2]})',
    { onResult: (r) => seen.push(r) });
  assert.equal(ex.results.length, 2);
  assert.equal(seen.length, 2);
  assert.equal(ex.results[0].isMainResult, false);
  assert.equal(ex.results[0].html, '<b>hi</b>');
  assert.equal(ex.results[1].isMainResult, true);
  assert.match(ex.results[1].html, /<table/);
  assert.match(ex.results[1].text, /a/);
});

test('a matplotlib figure comes back as a PNG', async () => {
  const ex = await sbx.runCode(
    'import matplotlib.pyplot as plt\n' +
    'plt.plot([1, 2, 3], [1, 4, 9])\n' +
    'plt.show()');
  assert.equal(ex.error, undefined);
  const png = ex.results.find((r) => r.png);
  assert.ok(png, `no PNG among ${JSON.stringify(ex.results.map((r) => r.formats()))}`);
  const bytes = Buffer.from(png.png, 'base64');
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.ok(png.formats().includes('png'));
});

test('an exception comes back as an error with its traceback', async () => {
  const errs = [];
  const ex = await sbx.runCode('def f():\n    return 1 / 0\nf()',
    { onError: (e) => errs.push(e) });
  assert.equal(ex.error.name, 'ZeroDivisionError');
  assert.equal(ex.error.value, 'division by zero');
  assert.match(ex.error.traceback, /ZeroDivisionError/);
  assert.match(ex.error.traceback, /return 1 \/ 0/);
  assert.equal(errs.length, 1);
  // stdout before the exception is kept
  const ex2 = await sbx.runCode('print("before")\nraise ValueError("bad")');
  assert.deepEqual(ex2.logs.stdout, ['before\n']);
  assert.equal(ex2.error.name, 'ValueError');
});

test('a timeout interrupts the code and the context stays usable', async () => {
  const out = [];
  await assert.rejects(
    sbx.runCode('import time\nprint("start", flush=True)\ntime.sleep(60)\nx = 0',
      { timeoutMs: 5_000, onStdout: (m) => out.push(m.line) }),
    TimeoutError);
  // one print, but Jupyter may send it as two stream messages ('start',
  // then the newline) when its output thread flushes between the writes
  assert.equal(out.join(''), 'start\n');
  const t0 = Date.now();
  const ex = await sbx.runCode('x');
  // interrupted, not waited for: x was never set to 0
  assert.equal(ex.text, '41');
  assert.ok(Date.now() - t0 < 50_000, 'the sleep was interrupted');
});

test('envs reach the code for that call only', async () => {
  const ex = await sbx.runCode('import os\nos.environ["CUBE_CI_VAR"]',
    { envs: { CUBE_CI_VAR: 'hello world' } });
  assert.equal(ex.text, "'hello world'");
  const ex2 = await sbx.runCode('import os\nos.environ.get("CUBE_CI_VAR", "unset")');
  assert.equal(ex2.text, "'unset'");
});

test('two contexts are isolated; list, restart and remove', async () => {
  const a = await sbx.createCodeContext(slow);
  const b = await sbx.createCodeContext({ language: 'python', cwd: '/tmp', ...slow });
  assert.equal(a.language, 'python');
  assert.equal(b.cwd, '/tmp');
  assert.notEqual(a.id, b.id);
  await sbx.runCode('y = "in a"', { context: a });
  assert.equal((await sbx.runCode('y', { context: a })).text, "'in a'");
  const inB = await sbx.runCode('y', { context: b });
  assert.equal(inB.error.name, 'NameError');
  assert.equal((await sbx.runCode('import os\nos.getcwd()', { context: b })).text, "'/tmp'");
  // the default context has none of it either
  assert.equal((await sbx.runCode('y')).error.name, 'NameError');
  const ids = (await sbx.listCodeContexts()).map((c) => c.id);
  assert.ok(ids.includes(a.id) && ids.includes(b.id), JSON.stringify(ids));
  await sbx.restartCodeContext(a);
  assert.equal((await sbx.runCode('y', { context: a })).error.name, 'NameError');
  await sbx.removeCodeContext(b);
  assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === b.id));
  await assert.rejects(sbx.runCode('1', { context: b }),
    (e) => e instanceof NotFoundError && /not found/.test(e.message));
  // runCode is async: the SDK's refusal of both a context and a language
  // comes back as a rejected promise
  await assert.rejects(sbx.runCode('1', { context: a, language: 'python' }),
    (e) => e instanceof InvalidArgumentError && /not both/.test(e.message));
});

test('bash keeps its state; a failing command is an error', async () => {
  const ex = await sbx.runCode('GREETING=hi; cd /tmp; echo "$GREETING from $(pwd)"',
    { language: 'bash' });
  assert.deepEqual(ex.logs.stdout, ['hi from /tmp\n']);
  assert.equal(ex.error, undefined);
  const ex2 = await sbx.runCode('echo "$GREETING again in $(pwd) $V"; ls /nonexistent',
    { language: 'bash', envs: { V: 'with env' } });
  assert.equal(ex2.logs.stdout.join(''), 'hi again in /tmp with env\n');
  assert.match(ex2.logs.stderr.join(''), /nonexistent/);
  assert.equal(ex2.error.name, 'Error');
  assert.equal(ex2.error.value, '2');
});

test('an unsupported language is refused clearly', async () => {
  await assert.rejects(sbx.runCode('console.log(1)', { language: 'javascript' }),
    (e) => e instanceof SandboxError && /400/.test(e.message));
});

test('runCode on a killed sandbox fails', async () => {
  const id = sbx.sandboxId;
  await Sandbox.kill(id);
  made.delete(id);
  // cubed answers 502 "sandbox not found", which the SDK reports as a
  // sandbox that timed out (a network failure would be a TypeError)
  await assert.rejects(sbx.runCode('1', { timeoutMs: 20_000 }),
    (e) => e instanceof TimeoutError && /sandbox not found/.test(e.message));
});
