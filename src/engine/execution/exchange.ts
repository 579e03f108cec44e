import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GafferError } from '../../domain/errors.js';
import { bundleBase } from '../../evidence/cluster-git.js';
import type { RepoFacts } from '../../evidence/worktree-git.js';
import { NODE_TRIES, type Claim, type WireAttempt } from './wire.js';

/** The largest result bundle a node may send, bytes. */
export const MAX_RESULT_BYTES = 2 * 1024 ** 3;

/** Most claims of one entry: one per BullMQ try (a node gave it back), and one more after BullMQ hands it on from a stalled node (`maxStalledCount` 1). */
const MAX_CLAIMS = NODE_TRIES + 1;

/**
 * What the coordinator's HTTP API offers its nodes (spec 09), and nothing else: the attempt behind
 * a queue entry, to the node that took the entry; an attempt's base as a git bundle; and a place to
 * send the attempt's commit back as one. A node proves it is one with the node token (the bearer),
 * its right to an attempt with the entry's one-time value and its BullMQ lock (the claim), and then
 * with the ticket the claim gave it: a node never reads another job's anything, and the node token
 * opens no other route.
 */
export interface NodeExchange {
  /** True when `token` is the cluster's node token (compared in constant time). */
  isNode(token: string): boolean;
  /** The attempt behind a live entry, to the node holding the entry's BullMQ lock, once per take. */
  claim(key: string, claim: Claim): Promise<WireAttempt>;
  /** The base bundle of a live attempt (made on first ask, shared by the attempts of one base). */
  base(key: string, ticket: string): Promise<{ file: string; size: number }>;
  /** Takes one upload of a live attempt's result bundle; the attempt reads it when the node's report names it. */
  putResult(key: string, ticket: string, upload: string, body: ReadableStream<Uint8Array>): Promise<{ bytes: number }>;
}

/** What a queue entry stands for until its taker claims it. */
export interface Offer {
  /** The entry's runner (its queue). */
  runner: string;
  /** The entry's one-time value. */
  once: string;
  /** When the entry expires, ms since the epoch. */
  expires: number;
  /** The attempt, less its ticket (made per claim). */
  attempt: Omit<WireAttempt, 'ticket'>;
}

/** What Redis says of an entry: whether this lock token holds it now, how often it stalled, and how often a node gave it back (BullMQ's tries). */
export type Vouch = (
  runner: string,
  key: string,
  lock: string,
) => Promise<{ holds: boolean; stalls: number; tries: number }>;

/** One attempt open to the nodes. */
interface Opened {
  /** The digest of the ticket of its latest claim; null before any. */
  digest: Buffer | null;
  repo: RepoFacts;
  base: string;
  uploads: Set<string>;
  offer: { runner: string; once: Buffer; expires: number; attempt: Omit<WireAttempt, 'ticket'> } | null;
  /** Each claim that was granted: the lock it came with, and the stalls and tries BullMQ had counted. */
  claims: { lock: string; stalls: number; tries: number }[];
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
  readonly #vouch: Vouch;
  readonly #say: (line: string) => void;

  constructor(dir: string, nodeToken: string, opts: { vouch: Vouch; say: (line: string) => void }) {
    this.#dir = dir;
    this.#nodeToken = digestOf(nodeToken);
    this.#vouch = opts.vouch;
    this.#say = opts.say;
    // what a coordinator that died left here belongs to attempts that are gone
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  isNode(token: string): boolean {
    return timingSafeEqual(digestOf(token), this.#nodeToken);
  }

  /** Opens an attempt to the nodes: the node that takes its entry may claim it with the offer's one-time value. */
  open(key: string, repo: RepoFacts, base: string, offer: Offer): void {
    this.#open.set(key, {
      digest: null,
      repo,
      base,
      uploads: new Set(),
      offer: { runner: offer.runner, once: digestOf(offer.once), expires: offer.expires, attempt: offer.attempt },
      claims: [],
    });
  }

  async claim(key: string, claim: Claim): Promise<WireAttempt> {
    const refuse = (code: 'not_found' | 'conflict', why: string): never => {
      this.#say(`refused node ${claim.node}'s claim of ${key}: ${why}`);
      throw new GafferError(code, `no claim of ${key}: ${why}`);
    };
    const opened = this.#open.get(key);
    const offer = opened?.offer;
    // one answer for an unknown attempt and a wrong value: a node learns nothing of attempts not its own
    if (!opened || !offer || !timingSafeEqual(digestOf(claim.once), offer.once))
      return refuse('not_found', 'no live attempt for this entry (it ended, or the entry is a copy): nothing runs');
    if (Date.now() >= offer.expires)
      return refuse('conflict', `its entry expired at ${new Date(offer.expires).toISOString()}: nothing runs`);
    const vouched = await this.#vouch(offer.runner, key, claim.lock);
    if (!vouched.holds)
      return refuse(
        'conflict',
        "the claim's BullMQ lock does not hold the entry: only the node that took it may claim it",
      );
    // read again after the wait: two claims at once are told apart here
    const last = opened.claims.at(-1);
    // handed on: after a stall, or a node gave it back (BullMQ's next try; the same node's worker may hold it with the same lock)
    const handedOn = last !== undefined && (vouched.stalls > last.stalls || vouched.tries > last.tries);
    if (last && !handedOn && last.lock === claim.lock)
      return refuse('conflict', 'its one-time value was used already (a replay)');
    if (last && (!handedOn || opened.claims.length >= MAX_CLAIMS))
      return refuse('conflict', 'its one-time value was used already, and BullMQ did not hand the entry on since');
    if (!this.#open.has(key)) return refuse('not_found', 'the attempt ended meanwhile');
    opened.claims.push({ lock: claim.lock, stalls: vouched.stalls, tries: vouched.tries });
    // a ticket per claim: the node that had the entry before a stall can no longer fetch or send anything
    const ticket = randomBytes(32).toString('base64url');
    opened.digest = digestOf(ticket);
    return { ...offer.attempt, ticket };
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
    if (!opened || opened.digest === null || !timingSafeEqual(digestOf(ticket), opened.digest))
      throw new GafferError('not_found', `no open attempt ${key} for this ticket`);
    return opened;
  }

  #uploadFile(key: string, upload: string): string {
    return join(this.#dir, `result-${key}-${upload}.bundle`);
  }
}
