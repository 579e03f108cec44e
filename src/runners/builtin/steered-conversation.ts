import type { ModelMessage } from 'ai';

/**
 * The user messages a run was steered with, where each joined the conversation. The SDK rebuilds each
 * step's messages from the first ones and the responses so far, so every step (and every saved
 * session) has them woven back in at the point they were delivered.
 */
export class SteeredConversation {
  readonly #first: number;
  /** Each message and how many response messages preceded it. */
  readonly #added: { after: number; message: ModelMessage }[] = [];

  /** `first`: how many messages the run began with (the resumed history and the instruction). */
  constructor(first: number) {
    this.#first = first;
  }

  get isEmpty(): boolean {
    return this.#added.length === 0;
  }

  /** Adds messages delivered now, before a step whose unwoven conversation is `length` long. */
  add(length: number, texts: readonly string[]): void {
    for (const content of texts) this.#added.push({ after: length - this.#first, message: { role: 'user', content } });
  }

  /** The conversation with the delivered messages in place. */
  weave(conversation: readonly ModelMessage[]): ModelMessage[] {
    const responses = conversation.slice(this.#first);
    const out = conversation.slice(0, this.#first);
    let at = 0;
    for (const { after, message } of this.#added) {
      out.push(...responses.slice(at, after), message);
      at = Math.max(at, after);
    }
    out.push(...responses.slice(at));
    return out;
  }
}
