import { Engine } from '../../engine/engine.js';
import { resolveDataDir } from '../../config/data-dir.js';

/** What every command reaches: output streams, `--json`, and the engine on the data dir (opened lazily). */
export class CliContext {
  readonly json: boolean;
  readonly dataDir: string;
  #engine: Promise<Engine> | null = null;

  constructor(opts: { json?: boolean; dataDir?: string }) {
    this.json = opts.json ?? false;
    this.dataDir = resolveDataDir(opts.dataDir);
  }

  /** The engine: opening it also turns jobs of dead processes into `interrupted`. */
  engine(): Promise<Engine> {
    this.#engine ??= Engine.open({ dataDir: this.dataDir });
    return this.#engine;
  }

  /** Answers on stdout. */
  out(text: string): void {
    process.stdout.write(`${text}\n`);
  }

  /** Human messages and errors on stderr. */
  err(text: string): void {
    process.stderr.write(`${text}\n`);
  }

  async close(): Promise<void> {
    if (this.#engine) await (await this.#engine).close();
  }
}
