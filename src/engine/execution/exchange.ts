import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GafferError } from '../../domain/errors.js';
import { bundleBase } from '../../evidence/cluster-git.js';
import type { RepoFacts } from '../../evidence/worktree-git.js';
import type { NodeCredentials } from '../../config/node-credentials.js';
import { DEFAULT_STALL_S, type Claim, type WireAttempt, type WireProgress, type WireResult } from './wire.js';

/** The largest result bundle a node may send, bytes. */
export const MAX_RESULT_BYTES = 2 * 1024 ** 3;

/**
 * What the coordinator's HTTP API offers its nodes (spec 09), and nothing else: the attempt behind
 * a queue entry, to the node the coordinator offered it to; an attempt's base as a git bundle; a
 * place to send the attempt's commit back as one; its output and its report. A node proves who it
 * is with its own credential (the bearer: `<name>.<secret>`, issued by `gaffer nodes issue`), its
 * right to an attempt by being the node the coordinator chose and holding the entry's one-time
 * value (the claim), and then with the ticket the claim gave it. Nothing Redis says decides a
 * claim: a node that reads or rewrites every key there still gets no other node's attempt.
 */
export interface NodeExchange {
  /** The node a credential authenticates (its name), or null: unknown, revoked, or the shared token of old. */
  authenticate(credential: string): string | null;
  /** The attempt behind a live entry, to the node it was offered to, once per offer. */
  claim(key: string, claim: Claim, node: string): Promise<WireAttempt>;
  /** The base bundle of a live attempt (made on first ask, shared by the attempts of one base). */
  base(key: string, ticket: string, node: string): Promise<{ file: string; size: number }>;
  /** Takes one upload of a live attempt's result bundle; the attempt reads it when the node's report names it. */
  putResult(
    key: string,
    ticket: string,
    node: string,
    upload: string,
    body: ReadableStream<Uint8Array>,
  ): Promise<{ bytes: number }>;
  /** The node's output or detected state of a live attempt. */
  progress(key: string, ticket: string, node: string, progress: WireProgress): void;
  /** The node's report of a live attempt: its end. */
  report(key: string, ticket: string, node: string, result: WireResult): void;
  /** The node's word that it still runs a live attempt (sent every few seconds while it does). */
  beat(key: string, ticket: string, node: string): void;
  /** The node gives a live attempt back (it cannot finish it): the coordinator offers it to another node. */
  release(key: string, ticket: string, node: string, why: string): void;
}

/** What the exchange tells the attempt's follower. */
export interface ExchangeEvents {
  /** The node the attempt was offered to claimed it. */
  claimed(key: string, node: string): void;
  progress(key: string, progress: WireProgress): void;
  report(key: string, result: WireResult): void;
  /** The node the attempt was offered to gave it back, saying why. */
  released(key: string, node: string, why: string): void;
  say(line: string): void;
}

/** One attempt open to the nodes. */
interface Opened {
  runner: string;
  /** When its entries stop being runnable, ms since the epoch. */
  expires: number;
  attempt: Omit<WireAttempt, 'ticket'>;
  repo: RepoFacts;
  base: string;
  uploads: Set<string>;
  /** The current offer: the node chosen, the digest of its one-time value, and whether it was claimed; null while none. */
  offer: { node: string; once: Buffer; claimed: boolean } | null;
  /** The digest of the ticket of the current offer's claim; null before it. */
  digest: Buffer | null;
  /** When the claiming node was last heard on the node routes with its ticket, ms since the epoch (0 before a claim). */
  heard: number;
  /** How long the claiming node may go unheard before its attempt is taken for lost, ms (its `--stall-s`). */
  stallMs: number;
}

const digestOf = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();
const UPLOAD = /^[A-Za-z0-9_-]{8,64}$/;

/** The coordinator's side of the exchange: tickets, base bundles and uploads under `<data dir>/cluster`. */
export class AttemptExchange implements NodeExchange {
  readonly #dir: string;
  readonly #credentials: NodeCredentials;
  readonly #open = new Map<string, Opened>();
  /** Base bundles by commit: made once, removed when no open attempt uses them. */
  readonly #bundles = new Map<string, Promise<string>>();
  readonly #events: ExchangeEvents;

  constructor(dir: string, credentials: NodeCredentials, events: ExchangeEvents) {
    this.#dir = dir;
    this.#credentials = credentials;
    this.#events = events;
    // what a coordinator that died left here belongs to attempts that are gone
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  authenticate(credential: string): string | null {
    return this.#credentials.authenticate(credential);
  }

  /** Opens an attempt to the nodes; nobody may claim it before it is offered. */
  open(
    key: string,
    repo: RepoFacts,
    base: string,
    opened: { runner: string; expires: number; attempt: Omit<WireAttempt, 'ticket'> },
  ): void {
    this.#open.set(key, {
      ...opened,
      repo,
      base,
      uploads: new Set(),
      offer: null,
      digest: null,
      heard: 0,
      stallMs: DEFAULT_STALL_S * 1000,
    });
  }

  /** Offers an open attempt to one node, with a new one-time value: an earlier offer and its ticket stop working. */
  offer(key: string, node: string, once: string): void {
    const opened = this.#open.get(key);
    if (!opened) return;
    opened.offer = { node, once: digestOf(once), claimed: false };
    opened.digest = null;
    opened.heard = 0;
  }

  /** Takes an attempt's offer back (it goes to another node): its entry and its ticket stop working. */
  withdraw(key: string): void {
    const opened = this.#open.get(key);
    if (!opened) return;
    opened.offer = null;
    opened.digest = null;
    opened.heard = 0;
  }

  /** Whether the attempt's current offer was claimed. */
  isClaimed(key: string): boolean {
    return this.#open.get(key)?.offer?.claimed === true;
  }

  /**
   * When the node that claimed the attempt's current offer was last heard with its ticket, and how
   * long it may go unheard (its stall window); null before a claim. This, not its BullMQ lock, is
   * the coordinator's evidence that the node still runs it: only that node can renew it.
   */
  lastHeard(key: string): { at: number; stallMs: number } | null {
    const opened = this.#open.get(key);
    if (opened?.offer?.claimed !== true) return null;
    return { at: opened.heard, stallMs: opened.stallMs };
  }

  async claim(key: string, claim: Claim, node: string): Promise<WireAttempt> {
    const refuse = (code: 'not_found' | 'conflict', why: string, told = why): never => {
      this.#events.say(`refused node ${node}'s claim of ${key}: ${why}`);
      throw new GafferError(code, `no claim of ${key}: ${told}`);
    };
    const opened = this.#open.get(key);
    const offer = opened?.offer;
    // one answer for an unknown attempt, a wrong value and another node's offer: a node learns nothing of attempts not its own
    const unknown =
      'no live attempt offered to this node for this entry (it ended, or the entry is a copy): nothing runs';
    if (!opened || !offer || !timingSafeEqual(digestOf(claim.once), offer.once)) return refuse('not_found', unknown);
    if (offer.node !== node)
      return refuse(
        'not_found',
        `it was offered to node ${offer.node}, not to ${node} (a node that read the entry on the Redis): nothing of it was handed over`,
        unknown,
      );
    if (Date.now() >= opened.expires)
      return refuse('conflict', `its entry expired at ${new Date(opened.expires).toISOString()}: nothing runs`);
    if (offer.claimed) return refuse('conflict', 'its one-time value was used already (a replay)');
    offer.claimed = true;
    // a ticket per claim: a node the attempt was taken from can no longer fetch, send or report anything
    const ticket = randomBytes(32).toString('base64url');
    opened.digest = digestOf(ticket);
    opened.heard = Date.now();
    opened.stallMs = (claim.stall_s ?? DEFAULT_STALL_S) * 1000;
    this.#events.claimed(key, node);
    return { ...opened.attempt, ticket };
  }

  progress(key: string, ticket: string, node: string, progress: WireProgress): void {
    this.#admit(key, ticket, node);
    this.#events.progress(key, progress);
  }

  report(key: string, ticket: string, node: string, result: WireResult): void {
    this.#admit(key, ticket, node);
    this.#events.report(key, { ...result, node });
  }

  beat(key: string, ticket: string, node: string): void {
    this.#admit(key, ticket, node);
  }

  release(key: string, ticket: string, node: string, why: string): void {
    this.#admit(key, ticket, node);
    this.#events.released(key, node, why);
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

  async base(key: string, ticket: string, node: string): Promise<{ file: string; size: number }> {
    const file = await this.#bundleOf(this.#admit(key, ticket, node));
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
    node: string,
    upload: string,
    body: ReadableStream<Uint8Array>,
  ): Promise<{ bytes: number }> {
    const opened = this.#admit(key, ticket, node);
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

  #admit(key: string, ticket: string, node: string): Opened {
    const opened = this.#open.get(key);
    // one answer for an unknown attempt, a wrong ticket and another node: a node learns nothing of attempts not its own
    if (
      !opened ||
      opened.digest === null ||
      opened.offer?.node !== node ||
      !timingSafeEqual(digestOf(ticket), opened.digest)
    )
      throw new GafferError('not_found', `no open attempt ${key} for this ticket`);
    opened.heard = Date.now();
    return opened;
  }

  #uploadFile(key: string, upload: string): string {
    return join(this.#dir, `result-${key}-${upload}.bundle`);
  }
}
