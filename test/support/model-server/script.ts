// The script queue: which turn answers a request, and side requests answered without consuming turns.
import type { AutoOptions, ModelRequest, ScriptOptions, ScriptStep, Turn } from './types.js';

/** What answers a request: a scripted turn (with its position), an automatic answer, or nothing. */
export type Pick = { kind: 'turn'; turn: Turn; index: number } | { kind: 'auto' } | { kind: 'none'; pending: number };

interface Pending {
  step: ScriptStep;
  index: number;
}

/** An ordered list of turns; each request takes the first pending turn that accepts it. */
export class Script {
  #pending: Pending[] = [];
  #auto: Required<AutoOptions> | undefined;

  /** Replaces the pending turns (and the side-request policy). */
  load(steps: readonly ScriptStep[], options: ScriptOptions = {}): void {
    steps.forEach(validateStep);
    this.#pending = steps.map((step, index) => ({ step, index }));
    const auto = options.auto;
    this.#auto =
      auto === undefined || auto === false
        ? undefined
        : {
            when: (auto === true ? undefined : auto.when) ?? ((r) => !r.hasTools),
            text: (auto === true ? undefined : auto.text) ?? 'Scripted session',
          };
  }

  /** Turns not yet used. */
  get pending(): number {
    return this.#pending.length;
  }

  /** The text side requests get. */
  get autoText(): string {
    return this.#auto?.text ?? 'Scripted session';
  }

  /** Takes the turn that answers this request. A side request only takes a turn whose `when` names it. */
  take(request: ModelRequest): Pick {
    const isSide = this.#auto?.when(request) ?? false;
    const at = this.#pending.findIndex(({ step }) => {
      if (typeof step === 'function' || step.when === undefined) return !isSide;
      return step.when(request);
    });
    if (at >= 0) {
      const [taken] = this.#pending.splice(at, 1);
      if (taken === undefined) return { kind: 'none', pending: this.#pending.length };
      return {
        kind: 'turn',
        turn: typeof taken.step === 'function' ? taken.step(request) : taken.step,
        index: taken.index,
      };
    }
    return isSide ? { kind: 'auto' } : { kind: 'none', pending: this.#pending.length };
  }
}

/** Throws on a turn that says nothing, so a typo in a test fails at `script()`, not as a confusing 500 later. */
export function validateStep(step: ScriptStep, index: number): void {
  if (typeof step === 'function') return;
  const kinds = ['text', 'toolCalls', 'error', 'stall', 'auto', 'reply'].filter((key) => key in step);
  if (kinds.length === 0)
    throw new TypeError(
      `model-server: turn ${index} has none of text, toolCalls, error, stall, auto, reply: ${JSON.stringify(step)}`,
    );
  if ('stall' in step && step.then !== undefined) validateStep(step.then, index);
}
