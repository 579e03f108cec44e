import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where `npm run build` puts the board (board/vite.config.ts): the same place from src/ and dist/. */
export const BOARD_DIR = fileURLToPath(new URL('../../../dist/board/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/**
 * The board's pages may talk to this server only; style attributes are allowed because the diff
 * renderer and the chart set them.
 */
export const BOARD_CSP =
  "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export interface BoardFile {
  body: Uint8Array;
  type: string;
  /** Vite's hashed assets never change under their name. */
  immutable: boolean;
}

/** The built board's files, read once each. `path` is `index.html` or `assets/<name>`; anything else is not one of them. */
export class BoardFiles {
  readonly #cache = new Map<string, BoardFile | null>();

  constructor(readonly dir: string = BOARD_DIR) {}

  async get(path: string): Promise<BoardFile | null> {
    if (path !== 'index.html' && !/^assets\/[\w.-]+$/.test(path)) return null;
    if (this.#cache.has(path)) return this.#cache.get(path) ?? null;
    let file: BoardFile | null;
    try {
      const body = await readFile(this.dir + path);
      file = { body, type: TYPES[extname(path)] ?? 'application/octet-stream', immutable: path.startsWith('assets/') };
    } catch {
      file = null;
    }
    // a board built after the server started is found on the next request
    if (file !== null) this.#cache.set(path, file);
    return file;
  }
}
