import { StringDecoder } from 'node:string_decoder';

/** Longest line kept whole, in characters; a longer run without a newline is cut (memory bound). */
export const DEFAULT_MAX_LINE_CHARS = 64 * 1024;

/**
 * Splits one output stream into lines across chunk boundaries: a chunk that ends mid-line
 * (or mid-character) keeps the rest until its newline arrives or `flush()` is called at exit.
 */
export class LineSplitter {
  readonly #decoder = new StringDecoder('utf8');
  readonly #maxLineChars: number;
  #partial = '';

  constructor(maxLineChars = DEFAULT_MAX_LINE_CHARS) {
    this.#maxLineChars = maxLineChars;
  }

  /** Complete lines in this chunk (without their `\n` or `\r\n`). */
  push(chunk: Buffer): string[] {
    const text = this.#partial + this.#decoder.write(chunk);
    const pieces = text.split('\n');
    let partial = pieces.pop() ?? '';
    const lines = pieces.map(stripCarriageReturn);
    while (partial.length > this.#maxLineChars) {
      lines.push(partial.slice(0, this.#maxLineChars));
      partial = partial.slice(this.#maxLineChars);
    }
    this.#partial = partial;
    return lines;
  }

  /** The unfinished last line, if any (at exit). */
  flush(): string[] {
    const rest = this.#partial + this.#decoder.end();
    this.#partial = '';
    return rest === '' ? [] : [stripCarriageReturn(rest)];
  }
}

function stripCarriageReturn(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}
