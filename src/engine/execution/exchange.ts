import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GafferError } from '../../domain/errors.js';
import { bundleBase } from '../../evidence/cluster-git.js';
import type { RepoFacts } from '../../evidence/worktree-git.js';

/** The largest result bundle a node may send, bytes. */
export const MAX_RESULT_BYTES = 2 * 1024 ** 3;

/**
 * What the coordinator's HTTP API offers its nodes (spec 09), and nothing else: an attempt's base
 * as a git bundle, and a place to send the attempt's commit back as one. A node proves it is one
 * with the node token (the bearer), and its right to one attempt with that attempt's ticket: a
 * node never reads another job's anything, and the node token opens no other route.
 */
export interface NodeExchange {
  /** True when `token` is the cluster's node token (compared in constant time). */
  isNode(token: string): boolean;
  /** The base bundle of a live attempt (made on first ask, shared by the attempts of one base). */
  base(key: string, ticket: string): Promise<{ file: string; size: number }>;
  /** Takes one upload of a live attempt's result bundle; the attempt reads it when the node's report names it. */
  putResult(key: string, ticket: string, upload: string, body: ReadableStream<Uint8Array>): Promise<{ bytes: number }>;
}

/** One attempt open to the nodes. */
interface Opened {
  digest: Buffer;
  repo: RepoFacts;
  base: string;
  uploads: Set<string>;
}

const digestOf = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();
const UPLOAD = /^[A-Za-z0-9_-]{8,64}$/;

/** The coordinator's side of the exchange: tickets, base bundles and uploads under `<data dir>/cluster`. */
export class AttemptExchange implements NodeExchange {
  readonly #dir: string;
  readonly #nodeToken: Buffer;
  readonly #open = new Map<string, Opened>();
  /** Base bundles by commit: made once, removed when no open attempt uses them. */
  readonly #bundles = new Map<string, Promise<string>>();

  constructor(dir: string, nodeToken: string) {
    this.#dir = dir;
    this.#nodeToken = digestOf(nodeToken);
    // what a coordinator that died left here belongs to attempts that are gone
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  isNode(token: string): boolean {
    return timingSafeEqual(digestOf(token), this.#nodeToken);
  }

  /** Opens an attempt to the nodes: its ticket. */
  open(key: string, repo: RepoFacts, base: string): string {
    const ticket = randomBytes(32).toString('base64url');
    this.#open.set(key, { digest: digestOf(ticket), repo, base, uploads: new Set() });
    return ticket;
  }

  /** Closes an attempt: its ticket stops working, its uploads go, and its base bundle when no other attempt uses it. */
  close(key: string): void {
    const opened = this.#open.get(key);
    if (!opened) return;
    this.#open.delete(key);
    for (const upload of opened.uploads) rmSync(this.#uploadFile(key, upload), { force: true });
    if (![...this.#open.values()].some((o) => o.base === opened.base)) {
      const bundle = this.#bundles.get(opened.base);
      this.#bundles.delete(opened.base);
      void bundle?.then(
        (file) => rmSync(file, { force: true }),
        () => undefined,
      );
    }
  }

  /** The file of an upload the node's report names, when it arrived whole. */
  resultFile(key: string, upload: string): string | null {
    const opened = this.#open.get(key);
    if (!opened?.uploads.has(upload)) return null;
    const file = this.#uploadFile(key, upload);
    return existsSync(file) ? file : null;
  }

  async base(key: string, ticket: string): Promise<{ file: string; size: number }> {
    const file = await this.#bundleOf(this.#admit(key, ticket));
    return { file, size: statSync(file).size };
  }

  /** Starts making an open attempt's base bundle before its node asks for it (a base no node can have yet). */
  prepare(key: string): void {
    const opened = this.#open.get(key);
    if (opened) this.#bundleOf(opened).catch(() => undefined);
  }

  #bundleOf(opened: Opened): Promise<string> {
    let bundle = this.#bundles.get(opened.base);
    if (!bundle) {
      // a name of its own: the file of an earlier bundle of this base may still be being removed (close)
      const file = join(this.#dir, `base-${opened.base}-${randomBytes(6).toString('hex')}.bundle`);
      bundle = bundleBase(opened.repo, opened.base, file).then(() => file);
      this.#bundles.set(opened.base, bundle);
      const made = bundle;
      bundle.catch(() => {
        if (this.#bundles.get(opened.base) === made) this.#bundles.delete(opened.base);
      });
    }
    return bundle;
  }

  async putResult(
    key: string,
    ticket: string,
    upload: string,
    body: ReadableStream<Uint8Array>,
  ): Promise<{ bytes: number }> {
    const opened = this.#admit(key, ticket);
    if (!UPLOAD.test(upload))
      throw new GafferError(
        'invalid_request',
        `the upload name must be 8..64 of A-Z a-z 0-9 _ -, got ${JSON.stringify(upload)}`,
        'gaffer-upload',
      );
    const file = this.#uploadFile(key, upload);
    const partial = `${file}.partial`;
    let bytes = 0;
    const cap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        if (bytes > MAX_RESULT_BYTES)
          done(new GafferError('payload_too_large', `a result bundle may be at most ${MAX_RESULT_BYTES} bytes`));
        else done(null, chunk);
      },
    });
    try {
      await pipeline(
        Readable.fromWeb(body as Parameters<typeof Readable.fromWeb>[0]),
        cap,
        createWriteStream(partial, { mode: 0o600 }),
      );
    } catch (err) {
      rmSync(partial, { force: true });
      throw err;
    }
    // the attempt may have ended while it arrived
    if (!this.#open.has(key)) {
      rmSync(partial, { force: true });
      throw new GafferError('not_found', `attempt ${key} is no longer open`);
    }
    renameSync(partial, file);
    opened.uploads.add(upload);
    return { bytes };
  }

  #admit(key: string, ticket: string): Opened {
    const opened = this.#open.get(key);
    // one answer for an unknown attempt and a wrong ticket: a node learns nothing of attempts not its own
    if (!opened || !timingSafeEqual(digestOf(ticket), opened.digest))
      throw new GafferError('not_found', `no open attempt ${key} for this ticket`);
    return opened;
  }

  #uploadFile(key: string, upload: string): string {
    return join(this.#dir, `result-${key}-${upload}.bundle`);
  }
}
