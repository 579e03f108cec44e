import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach } from 'vitest';
import type { EngineOptions } from '../../src/engine/engine.js';
import { createRunners } from '../../src/runners/index.js';
import { openEngine, serveEngine } from '../http/helpers.js';

/**
 * The board's end-to-end harness (issue 16): a real gaffer server on loopback with the built board
 * (`npm run build` builds it), and Debian's Chromium driven by playwright-core. The suite runs only
 * where that Chromium is installed (`.ci/run` installs it); `GAFFER_CHROMIUM` names another.
 */
export const CHROMIUM = process.env.GAFFER_CHROMIUM ?? '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);

/** Where screenshots are kept as CI artifacts. */
export const SHOTS_DIR = join(import.meta.dirname, '../../test-artifacts/board');

// the flags a closed network needs: no background fetches to Google, no first-run work
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

let browser: Browser | null = null;
async function theBrowser(): Promise<Browser> {
  browser ??= await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 60_000 });
  return browser;
}
afterAll(async () => {
  await browser?.close();
  browser = null;
});

const pages: Page[] = [];
/** What each page logged, threw and failed to load, said when its test fails. */
const seenBy = new Map<Page, string[]>();
afterEach(async (ctx) => {
  const open = pages.splice(0);
  if (ctx.task.result?.state === 'fail') {
    for (const page of open) {
      const body = await page
        .evaluate(() => document.body?.innerText.slice(0, 800) ?? '')
        .catch((e: unknown) => `(unreadable: ${String(e)})`);
      console.error(
        `board page at ${page.url()}\n--- it showed:\n${body}\n--- it saw:\n${seenBy.get(page)?.slice(-40).join('\n') || '(nothing logged)'}`,
      );
    }
  }
  for (const page of open) seenBy.delete(page);
  await Promise.all(open.map((p) => p.context().close()));
});

export interface Board {
  page: Page;
  engine: Awaited<ReturnType<typeof openEngine>>;
  server: Awaited<ReturnType<typeof serveEngine>>;
  /** The server's origin. */
  url: string;
  /** Goes to a board page by its hash (`#/jobs`, `#/jobs/<id>`, `#/new`, …). */
  open: (hash: string) => Promise<void>;
  /** A full-page screenshot kept under test-artifacts/board/<name>.png. */
  shot: (name: string) => Promise<string>;
}

/**
 * A fresh engine and server, a browser page logged in through a one-time login URL (as a person
 * does), at `width`×`height` (a laptop by default; 390 wide is a phone).
 */
export async function openBoard(
  opts: { engine?: Partial<EngineOptions>; width?: number; height?: number } = {},
): Promise<Board> {
  // unsandboxed unless a test says otherwise: the tests hold workers on a file in their own temp dir,
  // which the sandbox (where bubblewrap is installed, as in CI) hides; containment is test/sandbox's
  const engine = await openEngine({ runners: createRunners({ sandbox: 'off' }), ...opts.engine });
  const server = await serveEngine(engine);
  const context = await (
    await theBrowser()
  ).newContext({ viewport: { width: opts.width ?? 1280, height: opts.height ?? 860 }, bypassCSP: false });
  const page = await context.newPage();
  pages.push(page);
  page.setDefaultTimeout(20_000);
  // a failing test says what the page saw (afterEach above): what it logged and threw, the requests that failed or were refused
  const seen: string[] = [];
  seenBy.set(page, seen);
  page.on('console', (m) =>
    seen.push(`console.${m.type()}: ${m.text()}${m.location().url ? ` (${m.location().url})` : ''}`),
  );
  page.on('pageerror', (e) => seen.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => seen.push(`requestfailed: ${r.method()} ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('response', (r) => {
    if (r.status() >= 400) seen.push(`response ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  page.on('crash', () => seen.push('the page crashed'));
  const login = await server.call('POST', '/api/login');
  await page.goto(login.json.url as string);
  return {
    page,
    engine,
    server,
    url: server.url,
    open: async (hash) => {
      // a document of its own: a hash change while the login's page still starts its router raced it
      // (the Jobs page stayed, once in a loaded run)
      await page.goto('about:blank');
      await page.goto(`${server.url}/${hash}`);
    },
    shot: async (name) => {
      mkdirSync(SHOTS_DIR, { recursive: true });
      const path = join(SHOTS_DIR, `${name}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
  };
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * The serious and critical accessibility violations axe-core finds on the page as it is now (the
 * bar of issue 16: none). axe is evaluated in the page, not added as a script, so the board's
 * Content-Security-Policy stays as served.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run: (
            ctx: Document,
            opts: object,
          ) => Promise<{
            violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[];
          }>;
        };
      }
    ).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => JSON.stringify(n.target)),
    }));
  });
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
