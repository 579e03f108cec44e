import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * A checkpoint is asked for once the connection has been idle this long, ms: its fsyncs make the
 * commits running beside them wait (the WAL's pages are under writeback), so not in a burst.
 */
const IDLE_MS = 250;
/**
 * …and after this many commits without such a pause (~12 MB of WAL at ~3 pages a commit) the
 * connection checkpoints by itself, as SQLite would: in a burst the worker's checkpoint never
 * catches up with the writes, so the WAL could not start over and would grow for as long as it lasts.
 */
const CHECKPOINT_EVERY = 1000;
/** How long `close` waits for the worker to close its connection, ms. */
const CLOSE_WAIT_MS = 2000;

// The worker: its own connection to the db, a PASSIVE checkpoint per request (it waits for no
// reader or writer), its connection closed on 'close' (then the flag is set and main woken).
const WORKER_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.sqlite);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 1000');
const closed = new Int32Array(workerData.closed);
parentPort.on('message', (message) => {
  if (message === 'checkpoint') db.pragma('wal_checkpoint(PASSIVE)');
  else if (message === 'close') {
    db.close();
    Atomics.store(closed, 0, 1);
    Atomics.notify(closed, 0);
    process.exit(0);
  }
});
`;

/**
 * Runs a store's WAL checkpoints on a worker thread. A checkpoint copies the WAL back into the db
 * and fsyncs both: with SQLite's automatic checkpoint the commit that passes 1000 pages pays for
 * it, on the engine's thread — a few ms each, hundreds of ms on a slow disk. Here they run when
 * the connection pauses (or, in a long burst, every CHECKPOINT_EVERY commits). The store turns the
 * automatic ones off while this runs and back on if the worker fails.
 */
export class BackgroundCheckpointer {
  readonly #worker: Worker;
  readonly #checkpointHere: () => void;
  readonly #closed = new Int32Array(new SharedArrayBuffer(4));
  #commits = 0;
  #lastCommitAt = 0;
  #idleTimer: NodeJS.Timeout | null = null;
  #isRunning = true;

  /** `checkpointHere`: a checkpoint on the store's own connection; `onFail`: the worker died (the store checkpoints by itself again). */
  constructor(dbPath: string, checkpointHere: () => void, onFail: () => void) {
    this.#checkpointHere = checkpointHere;
    const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
    this.#worker = new Worker(WORKER_CODE, {
      eval: true,
      workerData: { sqlite, path: dbPath, closed: this.#closed.buffer },
    });
    this.#worker.unref(); // never what keeps the process alive
    const failed = (): void => {
      if (!this.#isRunning) return;
      this.#isRunning = false;
      onFail();
    };
    this.#worker.on('error', failed);
    this.#worker.on('exit', failed);
  }

  /** Counts a commit: the worker is asked for a checkpoint at the next idle pause; after CHECKPOINT_EVERY of them the store checkpoints itself. */
  noteCommit(): void {
    if (!this.#isRunning) return;
    this.#lastCommitAt = performance.now();
    if (++this.#commits >= CHECKPOINT_EVERY) {
      this.#commits = 0;
      this.#checkpointHere();
    } else this.#idleTimer ??= setTimeout(() => this.#onIdleTimer(), IDLE_MS).unref();
  }

  #onIdleTimer(): void {
    this.#idleTimer = null;
    if (!this.#isRunning || this.#commits === 0) return;
    const quietMs = performance.now() - this.#lastCommitAt;
    if (quietMs >= IDLE_MS) this.#request();
    else this.#idleTimer = setTimeout(() => this.#onIdleTimer(), IDLE_MS - quietMs).unref();
  }

  #request(): void {
    this.#commits = 0;
    this.#worker.postMessage('checkpoint');
  }

  /** Closes the worker's connection (waiting for it, bounded), so the store's own close is the last one and cleans up the WAL. */
  close(): void {
    if (!this.#isRunning) return;
    this.#isRunning = false;
    if (this.#idleTimer !== null) clearTimeout(this.#idleTimer);
    this.#worker.postMessage('close');
    Atomics.wait(this.#closed, 0, 0, CLOSE_WAIT_MS);
    void this.#worker.terminate();
  }
}
