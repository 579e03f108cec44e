// The board's figures (issue 16, spec 10): `board_first_paint_ms` — the Jobs page with 200 jobs in
// the store, from navigation to its rows painted — and `board_sse_latency_p99_ms` — from the server
// writing a job's status change to the Jobs page's DOM showing it. Both drive Debian's Chromium
// through playwright-core (as test/board does) against a `gaffer serve` process of dist/ serving
// the built board in dist/board; both are skipped, saying why, when Chromium or the build is missing.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { httpJson, log, makeTree, median, percentile, round, serveDataDir, sleep, sseClient } from './lib.mjs';

const CHROMIUM = process.env.GAFFER_CHROMIUM ?? '/usr/bin/chromium';
// the harness's flags (test/board/harness.ts): a closed network, no first-run work
const ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];
// the marks board/src/pages/jobs.tsx sets once the list is committed, and once it painted
const RENDERED_MARK = 'gaffer:jobs-rendered';
const PAINTED_MARK = 'gaffer:jobs-painted';
const LISTED_JOBS = 200;
const WORKSPACES = 20;

/** Why the board cannot be measured here, or null. */
function missing(ctx) {
  if (!existsSync(CHROMIUM)) return `no Chromium at ${CHROMIUM} (apt-get install chromium, or set GAFFER_CHROMIUM)`;
  if (!existsSync(join(ctx.repoRoot, 'dist', 'board', 'index.html')))
    return 'the board is not built in dist/board (npm run build)';
  return null;
}

function skipped(figures, why) {
  log(`  skipped: ${why}`);
  return {
    rows: figures.map((figure) => ({ figure, value: 'skipped', reference: why.slice(0, 60) })),
    notes: [`${figures.join(', ')} skipped: ${why}`],
  };
}

/**
 * A `gaffer serve` process over a data dir holding 200 finished jobs (1 in 10 failing, so verdicts
 * differ) over 20 workspaces — made first through the engine in process with shell workers
 * (`true`, `exit 1`) at a worker cap of 8 — and one Chromium. Shared by both cases.
 */
async function servedBoard(ctx) {
  if (ctx.shared.board) return ctx.shared.board;
  const { Engine } = await import('../dist/engine/engine.js');
  const { createRunners } = await import('../dist/runners/index.js');
  const dataDir = join(ctx.tmp, 'board-data');
  const roots = [];
  for (let w = 0; w < WORKSPACES; w++) {
    const root = join(ctx.tmp, 'board-ws', `w${String(w).padStart(2, '0')}`);
    makeTree(root, 20, 1024);
    roots.push(root);
  }
  const { createSandbox } = await import('../dist/platform/sandbox/sandbox.js');
  const engine = await Engine.open({
    dataDir,
    maxParallel: 8,
    runners: createRunners({ sandbox: 'off' }),
    sandbox: createSandbox('off'),
  });
  try {
    const t0 = performance.now();
    const ids = [];
    for (let k = 0; k < LISTED_JOBS; k++) {
      const fails = k % 10 === 9;
      const { job } = engine.submit({
        workspace: roots[k % roots.length],
        title: `bench job ${k}: ${fails ? 'a command that fails' : 'a no-op command'}`,
        verify: 'none',
        tasks: [
          {
            instruction: 'benchmark: a job for the board to list',
            type: 'research',
            command: fails ? 'exit 1' : 'true',
          },
        ],
      });
      ids.push(job.id);
    }
    await Promise.all(ids.map((id) => engine.settled(id)));
    await engine.maintenanceDone();
    log(`  board: ${LISTED_JOBS} jobs made through the engine in ${Math.round(performance.now() - t0)} ms`);
  } finally {
    await engine.close();
  }
  const server = await serveDataDir(ctx, dataDir);
  let browser;
  try {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 60_000 });
  } catch (err) {
    server.child.kill('SIGTERM');
    throw err;
  }
  const board = {
    server,
    browser,
    roots,
    /** A new browser context (empty cache) holding a board session: the one-time login redeemed without loading the page. */
    async context(viewport = { width: 1280, height: 860 }) {
      const context = await browser.newContext({ viewport });
      const { url } = await httpJson('POST', `${server.url}/api/login`);
      const res = await context.request.get(url, { maxRedirects: 0 });
      if (res.status() !== 303) throw new Error(`the board login answered ${res.status()}, not 303`);
      return context;
    },
    async close() {
      await browser.close();
      const exited = new Promise((resolve) => server.child.once('exit', resolve));
      server.child.kill('SIGTERM');
      await exited;
    },
  };
  ctx.shared.board = board;
  ctx.shared.cleanups ??= [];
  ctx.shared.cleanups.push(() => board.close());
  return board;
}

/**
 * Navigates to the Jobs page and resolves to the paint mark's time from the navigation's start, ms,
 * with where it went: the page's HTML read, its script run, the list read, the list rendered.
 */
async function paintOfJobs(page, url) {
  await page.goto('about:blank');
  await page.goto(`${url}/#/jobs`);
  await page.waitForFunction((mark) => performance.getEntriesByName(mark).length > 0, PAINTED_MARK, {
    timeout: 30_000,
  });
  const got = await page.evaluate(
    ([rendered, painted]) => {
      const nav = performance.getEntriesByType('navigation')[0];
      const list = performance.getEntriesByType('resource').find((r) => r.name.includes('/api/jobs?'));
      const script = performance
        .getEntriesByType('resource')
        .find((r) => r.name.includes('/assets/index-') && r.name.endsWith('.js'));
      return {
        ms: performance.getEntriesByName(painted)[0].startTime,
        parts: {
          html: nav.responseEnd,
          script: script?.responseEnd ?? NaN,
          list_asked: list?.startTime ?? NaN,
          list_read: list?.responseEnd ?? NaN,
          rendered: performance.getEntriesByName(rendered)[0]?.startTime ?? NaN,
        },
        rows: document.querySelectorAll('tr[data-job-id]').length,
      };
    },
    [RENDERED_MARK, PAINTED_MARK],
  );
  if (got.rows < LISTED_JOBS) throw new Error(`the Jobs page painted ${got.rows} rows, not ${LISTED_JOBS}`);
  return got;
}

const medianParts = (runs) =>
  Object.fromEntries(Object.keys(runs[0].parts).map((k) => [k, round(median(runs.map((r) => r.parts[k])), 1)]));
const describeParts = (p) =>
  Object.entries(p)
    .map(([k, v]) => `${k.replace('_', ' ')} ${v}`)
    .join(', ');

/**
 * board_first_paint: a fresh browser context each repetition (nothing cached), the Jobs page
 * navigated to: the time from the navigation's start to the paint after the list of 200 first
 * rendered (the page's own mark). The same page loaded again (assets from the cache) beside it.
 */
export async function boardFirstPaint(ctx) {
  const why = missing(ctx);
  if (why) return skipped(['board_first_paint_ms'], why);
  const board = await servedBoard(ctx);
  const cold = [];
  const warm = [];
  for (let i = 0; i <= ctx.reps; i++) {
    const context = await board.context();
    try {
      const page = await context.newPage();
      const first = await paintOfJobs(page, board.server.url);
      const again = await paintOfJobs(page, board.server.url);
      if (i > 0) {
        cold.push(first);
        warm.push(again);
      }
      if (i === ctx.reps) {
        mkdirSync(join(ctx.repoRoot, 'test-artifacts', 'board'), { recursive: true });
        writeFileSync(join(ctx.repoRoot, 'test-artifacts', 'board', 'bench-jobs-200.png'), await page.screenshot());
      }
    } finally {
      await context.close();
    }
    log(`  board_first_paint: ${i === 0 ? 'warm-up' : `rep ${i}/${ctx.reps}`} done`);
  }
  const value = median(cold.map((r) => r.ms));
  const cached = median(warm.map((r) => r.ms));
  return {
    figures: { board_first_paint_ms: round(value, 1), board_first_paint_cached_ms: round(cached, 1) },
    samples: {
      board_first_paint_ms: cold.map((r) => round(r.ms, 1)),
      board_first_paint_cached_ms: warm.map((r) => round(r.ms, 1)),
    },
    rows: [
      {
        figure: 'board_first_paint_ms',
        value: round(value, 1),
        exact: value,
        unit: 'ms',
        reference: `median of ${cold.length}, ${LISTED_JOBS} jobs, empty cache`,
        bar: { max: 500 },
      },
      {
        figure: 'board_first_paint_cached_ms',
        value: round(cached, 1),
        unit: 'ms',
        reference: 'the same page again, assets cached',
      },
    ],
    notes: [
      `board_first_paint (empty cache), medians in ms from the navigation's start: ${describeParts(medianParts(cold))}, painted ${round(value, 1)}`,
      `board_first_paint (cached): ${describeParts(medianParts(warm))}, painted ${round(cached, 1)}`,
    ],
  };
}

/** The offset of the page's clock (performance.timeOrigin + now()) from the system clock (Date.now(), the server's event `ts`), ms, from the round trip that took least. */
async function clockOffset(page) {
  let best = null;
  for (let i = 0; i < 30; i++) {
    const t0 = Date.now();
    const tp = await page.evaluate(() => performance.timeOrigin + performance.now());
    const t1 = Date.now();
    if (best === null || t1 - t0 < best.rtt) best = { rtt: t1 - t0, offset: tp - (t0 + t1) / 2 };
  }
  return best;
}

/**
 * board_sse_latency: jobs run one after another in the server (a shell worker sleeping 200 ms)
 * while the Jobs page, with 200 jobs listed, is open. Each `status` event's time is the one the
 * server stamped it with when it wrote it (its `ts`, read back from the job's events); a
 * MutationObserver in the page stamps the row's `data-status` changing to it (the page's clock,
 * matched to the system clock over the smallest round trip). p99 over every status change.
 * A plain SSE client on the same stream beside the page says how much of it is the server's.
 */
export async function boardSseLatency(ctx) {
  const why = missing(ctx);
  if (why) return skipped(['board_sse_latency_p99_ms'], why);
  const board = await servedBoard(ctx);
  const url = board.server.url;
  const jobs = ctx.quick ? 25 : 50;
  const context = await board.context();
  const streamed = [];
  const client = sseClient(`${url}/api/events?stream=1`, (frame) => {
    if (frame.event !== 'status') return;
    const { id, status } = JSON.parse(frame.data);
    streamed.push({ id, status, at: performance.timeOrigin + frame.at });
  });
  const emitted = [];
  let shown;
  let clock;
  try {
    const page = await context.newPage();
    await paintOfJobs(page, url);
    await page.evaluate(() => {
      const seen = [];
      globalThis.__statusSeen = seen;
      const stamp = (el, at) => {
        if (el instanceof Element && el.hasAttribute('data-job-id'))
          seen.push({ id: el.getAttribute('data-job-id'), status: el.getAttribute('data-status'), at });
      };
      new MutationObserver((records) => {
        const at = performance.timeOrigin + performance.now();
        for (const r of records) {
          if (r.type === 'attributes') stamp(r.target, at);
          else for (const n of r.addedNodes) stamp(n, at);
        }
      }).observe(document.querySelector('table.jobs-table tbody'), {
        subtree: true,
        childList: true,
        attributes: true,
        attributeFilter: ['data-status'],
      });
    });
    clock = await clockOffset(page);
    for (let k = 0; k < jobs; k++) {
      const job = await httpJson('POST', `${url}/api/jobs`, {
        workspace: board.roots[k % board.roots.length],
        title: `latency job ${k}`,
        verify: 'none',
        tasks: [
          { instruction: 'benchmark: a job whose status the board follows', type: 'research', command: 'sleep 0.2' },
        ],
      });
      const waited = await httpJson('GET', `${url}/api/jobs/${job.id}/wait?for=done&timeout_s=60`);
      if (!waited.met) throw new Error(`latency job ${k} did not end within 60 s (${waited.state.status})`);
      const { events } = await httpJson('GET', `${url}/api/jobs/${job.id}/events`);
      for (const e of events)
        if (e.name === 'job' && e.event === 'status') emitted.push({ id: job.id, status: e.status, at: e.ts * 1000 });
      await sleep(20 + Math.random() * 30);
    }
    // the last change reaches the page
    const last = emitted.at(-1);
    await page.waitForFunction(
      ({ id, status }) => globalThis.__statusSeen.some((s) => s.id === id && s.status === status),
      last,
      { timeout: 10_000 },
    );
    shown = await page.evaluate(() => globalThis.__statusSeen);
  } finally {
    client.close();
    await context.close();
  }
  const samples = [];
  const inStream = [];
  let unseen = 0;
  for (const e of emitted) {
    const frame = streamed.find((s) => s.id === e.id && s.status === e.status);
    if (frame) inStream.push(frame.at - e.at);
    const dom = shown.find((s) => s.id === e.id && s.status === e.status);
    if (dom) samples.push(dom.at - clock.offset - e.at);
    else unseen++;
  }
  if (samples.length < 50)
    throw new Error(
      `only ${samples.length} status changes were seen in the page (of ${emitted.length}): the bar needs ≥ 50`,
    );
  const p50 = percentile(samples, 0.5);
  const p99 = percentile(samples, 0.99);
  const notes = [
    `board_sse_latency: the page's clock matched to the system clock (Date.now, 1 ms steps, as the events' ts) over a ${clock.rtt} ms round trip: samples ±${round(clock.rtt / 2 + 1, 1)} ms`,
    `board_sse_latency: the same changes read by a plain SSE client beside the page (the server's part): p50 ${round(percentile(inStream, 0.5), 1)} ms, p99 ${round(percentile(inStream, 0.99), 1)} ms`,
  ];
  if (unseen > 0)
    notes.push(
      `board_sse_latency: ${unseen} of ${emitted.length} status changes never showed as such (a newer one rendered first)`,
    );
  return {
    figures: { board_sse_latency_p50_ms: round(p50, 2), board_sse_latency_p99_ms: round(p99, 2) },
    samples: { board_sse_latency_ms: samples.map((x) => round(x, 2)) },
    rows: [
      {
        figure: 'board_sse_latency_p50_ms',
        value: round(p50, 2),
        unit: 'ms',
        reference: `${samples.length} status changes, ${jobs} jobs, ${LISTED_JOBS} listed`,
      },
      {
        figure: 'board_sse_latency_p99_ms',
        value: round(p99, 2),
        exact: p99,
        unit: 'ms',
        reference: `p99 of the same (max ${round(Math.max(...samples), 1)} ms)`,
        bar: { max: 100 },
      },
    ],
    notes,
  };
}

/** The board's cases, run after the others (they share one served engine and browser, closed at the end). */
export const boardCases = [
  { name: 'board_first_paint', run: boardFirstPaint },
  { name: 'board_sse_latency', run: boardSseLatency },
];
