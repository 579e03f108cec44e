import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Commits between two checkpoint requests (a job commits ~25 times; SQLite's own default is ~1000 pages, ~300 of ours). */
const CHECKPOINT_EVERY = 100;
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
 * it, on the engine's thread — a few ms each, hundreds of ms on a slow disk. The store turns the
 * automatic ones off while this runs and back on if the worker fails.
 */
export class BackgroundCheckpointer {
  readonly #worker: Worker;
  readonly #closed = new Int32Array(new SharedArrayBuffer(4));
  #commits = 0;
  #isRunning = true;

  /** `onFail`: the worker died (the store checkpoints by itself again). */
  constructor(dbPath: string, onFail: () => void) {
    const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
    this.#worker = new Worker(WORKER_CODE, { eval: true, workerData: { sqlite, path: dbPath, closed: this.#closed.buffer } });
    this.#worker.unref(); // never what keeps the process alive
    const failed = (): void => {
      if (!this.#isRunning) return;
      this.#isRunning = false;
      onFail();
    };
    this.#worker.on('error', failed);
    this.#worker.on('exit', failed);
  }

  /** Counts a commit; every CHECKPOINT_EVERY of them the worker is asked for a checkpoint. */
  noteCommit(): void {
    if (!this.#isRunning || ++this.#commits < CHECKPOINT_EVERY) return;
    this.#commits = 0;
    this.#worker.postMessage('checkpoint');
  }

  /** Closes the worker's connection (waiting for it, bounded), so the store's own close is the last one and cleans up the WAL. */
  close(): void {
    if (!this.#isRunning) return;
    this.#isRunning = false;
    this.#worker.postMessage('close');
    Atomics.wait(this.#closed, 0, 0, CLOSE_WAIT_MS);
    void this.#worker.terminate();
  }
}
