import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Redis } from 'ioredis';
import { GafferError } from '../../domain/errors.js';
import { coordinatorKey, describeQueue } from './wire.js';
import { isPidAlive } from '../../platform/process/process-identity.js';

/** How long a claim outlives its coordinator's last renewal, ms (a coordinator killed without stopping frees it so). */
export const CLAIM_TTL_MS = 30_000;
const RENEW_MS = CLAIM_TTL_MS / 3;

/** Who holds a namespace, as its Redis key says. */
interface Holder {
  id: string;
  host: string;
  pid: number;
  dataDir: string;
  since: number;
}

// renews the claim when it is ours, takes it again when it is gone (a Redis restarted without its data); 0 when another holds it
const RENEW = `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const REPLACE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end return 0`;

/**
 * A coordinator's hold on its queue namespace (`--queue-prefix`): one coordinator per namespace,
 * so none drains, cancels or answers another's work. Held by a Redis key that expires
 * {@link CLAIM_TTL_MS} after its last renewal; a coordinator of the same host whose process is gone
 * (a restart after a crash) takes it over at once.
 */
export class NamespaceClaim {
  readonly #redis: Redis;
  readonly #key: string;
  readonly #prefix: string;
  readonly #value: string;
  #timer: NodeJS.Timeout | null = null;
  #lost: string | null = null;

  private constructor(redis: Redis, prefix: string, dataDir: string) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#key = coordinatorKey(prefix);
    const me: Holder = {
      id: randomBytes(12).toString('hex'),
      host: os.hostname(),
      pid: process.pid,
      dataDir,
      since: Date.now(),
    };
    this.#value = JSON.stringify(me);
  }

  /**
   * Takes the namespace for this coordinator, or refuses, naming who holds it and how to choose
   * another. `onLost` hears when another coordinator took it meanwhile (this one was cut off past
   * the claim's life).
   */
  static async take(
    redis: Redis,
    opts: { prefix: string; queue: string; dataDir: string; onLost: (why: string) => void },
  ): Promise<NamespaceClaim> {
    const claim = new NamespaceClaim(redis, opts.prefix, opts.dataDir);
    for (let tries = 0; ; tries++) {
      if ((await redis.set(claim.#key, claim.#value, 'PX', CLAIM_TTL_MS, 'NX')) === 'OK') break;
      const raw = await redis.get(claim.#key);
      if (raw === null && tries < 3) continue;
      const held = readHolder(raw);
      // the same host's coordinator that died without letting go (kill -9): its process is gone, so is its work
      if (
        raw !== null &&
        held !== null &&
        held.host === os.hostname() &&
        !isPidAlive(held.pid) &&
        (await redis.eval(REPLACE, 1, claim.#key, raw, claim.#value, CLAIM_TTL_MS)) === 'OK'
      )
        break;
      throw new GafferError(
        'conflict',
        `the queue namespace ${JSON.stringify(opts.prefix)} on ${describeQueue(opts.queue)} is held by another coordinator (${describeHolder(held)}): two coordinators on one namespace would drain and cancel each other's work — give this one its own with --queue-prefix NAME (and its nodes the same --queue-prefix), or stop that one (one killed without stopping lets go within ${CLAIM_TTL_MS / 1000} s)`,
        'queue-prefix',
      );
    }
    claim.#timer = setInterval(() => void claim.#renew(opts.onLost), RENEW_MS);
    claim.#timer.unref();
    return claim;
  }

  /** Why this coordinator no longer holds its namespace; null while it does. */
  get lost(): string | null {
    return this.#lost;
  }

  /** Lets the namespace go (when it is still this coordinator's). */
  async release(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.#redis.eval(RELEASE, 1, this.#key, this.#value).catch(() => undefined);
  }

  async #renew(onLost: (why: string) => void): Promise<void> {
    if (this.#lost !== null) return;
    let kept: unknown;
    try {
      kept = await this.#redis.eval(RENEW, 1, this.#key, this.#value, CLAIM_TTL_MS);
    } catch {
      // Redis away: the next renewal tries again
      return;
    }
    if (kept !== 0) return;
    const held = readHolder(await this.#redis.get(this.#key).catch(() => null));
    this.#lost = `another coordinator took the queue namespace ${JSON.stringify(this.#prefix)} (${describeHolder(held)}) while this one could not renew its claim: it puts no more attempts on the queue — restart it with its own --queue-prefix`;
    onLost(this.#lost);
  }
}

function readHolder(raw: string | null): Holder | null {
  if (raw === null) return null;
  try {
    const h = JSON.parse(raw) as Partial<Holder>;
    if (typeof h.host !== 'string' || typeof h.pid !== 'number' || typeof h.dataDir !== 'string') return null;
    return { id: String(h.id), host: h.host, pid: h.pid, dataDir: h.dataDir, since: Number(h.since) };
  } catch {
    return null;
  }
}

function describeHolder(h: Holder | null): string {
  if (h === null) return 'one that did not say who it is';
  return `pid ${h.pid} on ${h.host}, data dir ${h.dataDir}, since ${new Date(h.since).toISOString()}`;
}
