// SPDX-License-Identifier: GPL-2.0
//
// sdk_bench.mjs: Sandbox.create() to the first commands.run() result,
// through the unmodified E2B SDK, at each concurrency of
// $BENCH_CONCURRENCY (default "1 50"), $BENCH_SAMPLES runs each (default
// 50) but at least $BENCH_ROUNDS rounds (default 4: 200 runs at
// concurrency 50), no round started after a level has run $BENCH_LEVEL_S
// seconds (default 150; the figure says how many runs it has).  A round
// starts that many sandboxes at once, each timed from create() to the end
// of its first command, then kills them and, when $BENCH_POOLED=1 says
// there is a warm pool, waits $BENCH_REFILL_MS (default 800) per sandbox
// taken, at least a second, for the pool to fill again.  At the end it
// kills every sandbox of its own (metadata cube_bench=sdk) still listed:
// one whose create reached cubed but whose answer was lost (a reset
// connection) would otherwise run to its timeout.  Run by
// bench/sdk_bench.sh through selftests/e2b/run_sdk_test.sh; prints "#"
// lines and one "bench: ..." line per figure.  A measurement, not a test.
import { Sandbox } from 'e2b';

const template = process.env.CUBE_TEMPLATE || 'base';
const concs = (process.env.BENCH_CONCURRENCY || '1 50').split(/\s+/).filter(Boolean).map(Number);
const samples = Number(process.env.BENCH_SAMPLES || 50);
const minRounds = Number(process.env.BENCH_ROUNDS || 4);
const levelS = Number(process.env.BENCH_LEVEL_S || 150);
const refill = Number(process.env.BENCH_REFILL_MS || 800);
// 1 when cubed serves the template from a warm pool (sdk_bench.sh says)
const pooled = Number(process.env.BENCH_POOLED || 0);
const mark = { cube_bench: 'sdk' };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function pct(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)];
}

async function one() {
  const t0 = performance.now();
  let sbx;
  try {
    sbx = await Sandbox.create(template, { timeoutMs: 300_000, metadata: mark });
  } catch (e) {
    e.stage = 'create';
    throw e;
  }
  const t1 = performance.now();
  try {
    const r = await sbx.commands.run('true');
    if (r.exitCode !== 0) throw new Error(`true exited ${r.exitCode}`);
  } catch (e) {
    // the sandbox exists: a failed run must not leave it to its timeout
    await sbx.kill().catch(() => {});
    e.stage = 'run';
    throw e;
  }
  const t2 = performance.now();
  return { sbx, create: t1 - t0, total: t2 - t0 };
}

let failed = 0;
for (const c of concs) {
  const create = [], total = [];
  let errors = 0;
  const rounds = Math.max(Math.ceil(samples / c), minRounds);
  const t0 = performance.now();
  for (let round = 0; round < rounds; round++) {
    if (round && levelS && performance.now() - t0 > levelS * 1000) {
      console.log(`# concurrency ${c}: ${round} of ${rounds} rounds in ${levelS} s, no more`);
      break;
    }
    const res = await Promise.allSettled(Array.from({ length: c }, one));
    for (const r of res) {
      if (r.status === 'fulfilled') {
        create.push(r.value.create);
        total.push(r.value.total);
      } else {
        errors++;
        // fetch() hides the network error (reset, refused, closed) in cause
        const why = r.reason?.cause;
        console.log(`# concurrency ${c}, round ${round + 1}, ${r.reason?.stage || '?'}: ${r.reason}` +
          (why ? ` (${why.code || why.name || ''}${why.message ? ': ' + why.message : ''})` : ''));
      }
    }
    await Promise.allSettled(res.filter((r) => r.status === 'fulfilled')
      .map((r) => r.value.sbx.kill()));
    if (pooled && round + 1 < rounds) await sleep(Math.max(1000, c * refill));
  }
  create.sort((a, b) => a - b);
  total.sort((a, b) => a - b);
  const f = (x) => x.toFixed(1);
  console.log(`# concurrency ${c}: ${total.length} sandboxes, ${errors} errors; ` +
    `create p50 ${f(pct(create, 50))} ms p95 ${f(pct(create, 95))} ms; ` +
    `create to first run p50 ${f(pct(total, 50))} ms p95 ${f(pct(total, 95))} ms ` +
    `p99 ${f(pct(total, 99))} ms (${pooled ? 'warm pool' : 'no pool'})`);
  console.log(`bench: figure=latency_sdk pool=${pooled} concurrency=${c} runs=${total.length} ` +
    `failed=${errors} create_p50_ms=${f(pct(create, 50))} create_p95_ms=${f(pct(create, 95))} ` +
    `create_p99_ms=${f(pct(create, 99))} first_output_p50_ms=${f(pct(total, 50))} ` +
    `first_output_p95_ms=${f(pct(total, 95))} first_output_p99_ms=${f(pct(total, 99))}`);
  console.log(`bench: samples=latency_sdk pool=${pooled} concurrency=${c} ms=${total.map(f).join(',')}`);
  if (errors) failed = 1;
}
// what a lost answer left: listed, but never handed to this program
const left = [];
for (const p = Sandbox.list({ query: { metadata: mark } }); p.hasNext;)
  left.push(...(await p.nextItems()));
await Promise.allSettled(left.map((s) => Sandbox.kill(s.sandboxId)));
if (left.length)
  console.log(`# ${left.length} sandboxes whose create answer was lost were killed here`);
process.exit(failed);
