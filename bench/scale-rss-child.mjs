// The process whose memory scale_rss measures (bench/scale.mjs): it holds the evidence of the
// scale repository as an engine does (the spawner helper on) and runs 3 jobs' evidence there. The
// user's commits are made by the parent, so their git processes are not counted.
// argv: <repository> <data dir> <files>
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [root, dataDir, filesArg] = process.argv.slice(2);
const files = Number(filesArg);
const { takeSnapshot, diffSnapshots } = await import('../dist/evidence/index.js');
(await import('../dist/platform/spawner/spawner.js')).useSpawner();

const ask = (msg, answer) =>
  new Promise((resolve) => {
    const on = (m) => {
      if (m.t !== answer) return;
      process.off('message', on);
      resolve(m);
    };
    process.on('message', on);
    process.send(msg);
  });

/** The k-th generated path (bench/scale.mjs `scalePaths`). */
const pad = (n, w) => String(n).padStart(w, '0');
const pathAt = (k) => {
  const dir = Math.floor(k / 20);
  return `m${pad(Math.floor(dir / 100), 3)}/d${pad(dir % 100, 2)}/f${pad(k % 20, 2)}.txt`;
};

const t0 = Date.now();
await takeSnapshot({ workspace: root, dataDir, jobId: 'rss-start', label: 'pre' });
const jobs = [];
for (let n = 0; n < 3; n++) {
  await ask({ t: 'commit', n }, 'committed');
  const jobId = `rss-${n}`;
  const pre = await takeSnapshot({ workspace: root, dataDir, jobId, label: 'pre' });
  for (let k = 0; k < 10; k++) {
    const rel = pathAt((n * 7919 + k * Math.floor(files / 10)) % files);
    const target = k < 8 ? rel : rel.replace(/[^/]+$/, `rss-new-${Date.now()}-${k}.txt`);
    writeFileSync(join(root, target), `// ${target} rss ${n}\n${'x'.repeat(400)}\n`);
  }
  const post = await takeSnapshot({ workspace: root, dataDir, jobId, label: 'post', like: pre });
  const d = await diffSnapshots(pre, post);
  jobs.push({ modified: d.modified.length, added: d.added.length, deleted: d.deleted.length });
}
await ask({ t: 'done', jobs, ms: Date.now() - t0, maxRssKb: process.resourceUsage().maxRSS }, 'exit');
process.exit(0);
