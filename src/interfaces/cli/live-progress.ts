import type { JobEvent } from '../../domain/events.js';
import { isWritable, writeTo } from './safe-output.js';

/**
 * Live progress of `dispatch --wait` on stderr: on a terminal a line per worker updated in place
 * (plus the job phase); elsewhere plain lines for phases and worker starts, ends and states.
 */
export class LiveProgress {
  readonly #out: NodeJS.WriteStream;
  readonly #isTty: boolean;
  readonly #lines = new Map<string, string>();
  #drawn = 0;
  #phase = '';

  constructor(out: NodeJS.WriteStream, workerNames: string[]) {
    this.#out = out;
    this.#isTty = Boolean(out.isTTY);
    for (const name of workerNames) this.#lines.set(name, 'queued');
  }

  /** Takes one job event. */
  push(e: JobEvent): void {
    // a reader that went away (`| head`) ends the progress lines, never the job
    if (!isWritable(this.#out)) return;
    if (this.#isTty) {
      if (e.name === 'job') {
        if (e.event === 'phase') this.#phase = e.message;
      } else if (e.event === 'output') {
        this.#lines.set(e.name, `running  ${lastLine(e.message)}`);
      } else {
        this.#lines.set(
          e.name,
          `${String(e.status ?? e.state ?? e.event).padEnd(8)} ${e.event === 'started' ? '' : lastLine(e.message)}`,
        );
      }
      this.#redraw();
      return;
    }
    if (e.event === 'output' || e.event === 'status') return;
    writeTo(
      this.#out,
      `${e.name === 'job' ? 'job' : e.name}: ${e.event === 'phase' ? '' : `${e.event} `}${lastLine(e.message)}\n`,
    );
  }

  #redraw(): void {
    const width = Math.max(40, (this.#out.columns ?? 100) - 1);
    const rows = [`phase: ${this.#phase}`, ...[...this.#lines].map(([name, text]) => `  ${name.padEnd(14)} ${text}`)];
    let frame = this.#drawn > 0 ? `\x1b[${this.#drawn}A` : '';
    for (const row of rows) frame += `\x1b[2K${row.slice(0, width)}\n`;
    this.#drawn = rows.length;
    writeTo(this.#out, frame);
  }
}

function lastLine(text: string): string {
  return (text.trimEnd().split('\n').at(-1) ?? '').slice(0, 160);
}
