// Steering a running worker (issue 16): a message to a task while its job runs — read by a worker
// that takes input mid-run at its next turn, else kept for the task's follow-up when the job ends.
import { GafferError } from './errors.js';
import { FOLLOW_UP_LIMITS } from './follow-up.js';

/** How a steer reaches the task: in the live conversation before its next model call, or as the task's follow-up job. */
export const STEER_DELIVERIES = ['next_turn', 'queued_as_follow_up'] as const;
export type SteerDelivery = (typeof STEER_DELIVERIES)[number];

/** The longest message; the messages queued for one follow-up together are held to the follow-up's note limit too. */
export const STEER_LIMITS = { message: FOLLOW_UP_LIMITS.note, eventText: 2_000 } as const;

/** One message sent to a task. */
export interface SteerMessage {
  /** `st-` and 8 hex digits: what its `steer_received` and `steer_delivered` events name. */
  id: string;
  text: string;
  /** Epoch seconds it was received. */
  at: number;
}

/** What a live job made of a steer: how it is to reach the task, and who reads it. */
export interface SteerOffer {
  delivery: SteerDelivery;
  /** The attempt that reads it at its next turn; null when none has started yet, or for a follow-up. */
  worker: string | null;
  /** The runner of that attempt (else of the task's last attempt, or of the task when none has started). */
  runner: string;
  /** True when that runner reads messages mid-run (a queued message then found no turn left to be read at). */
  takesInput: boolean;
  /** Messages now waiting for the task, this one included. */
  waiting: number;
}

const bad = (field: string, message: string): GafferError =>
  new GafferError('invalid_request', `${field}: ${message}`, field);

/** Validates a steer body `{"message": "..."}`; refuses any other field, naming it. */
export function parseSteerBody(body: unknown): { message: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw bad('body', `must be a JSON object {"message": "..."}, got ${JSON.stringify(body)}`);
  const record = body as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (key !== 'message')
      throw bad(key, 'is not a steer field (only "message"; the worker and the route come from the job) — remove it');
  }
  const message = record.message;
  if (typeof message !== 'string' || message.trim() === '' || message.length > STEER_LIMITS.message) {
    throw bad(
      'message',
      `must be a non-empty string of at most ${STEER_LIMITS.message} characters, got ${typeof message === 'string' ? `${message.length} characters` : JSON.stringify(message ?? null)}`,
    );
  }
  return { message };
}

/** What the worker reads in its conversation: the message, said to come from whoever supervises the task. */
export function steerPrompt(text: string): string {
  return `Message from the person supervising this task, sent while you work — take it into account from now on:\n\n${text}`;
}

/** The follow-up's note made of the messages queued for a task: the one message as it is, several numbered in the order sent. */
export function steerNote(messages: readonly Pick<SteerMessage, 'text'>[]): string {
  if (messages.length === 1) return messages[0]?.text ?? '';
  const head = `${messages.length} messages were sent while the task ran; address each:`;
  return [head, ...messages.map((m, i) => `[${i + 1}] ${m.text}`)].join('\n\n');
}

/** A message as an event carries it: cut to 2,000 characters (the full text is in the transcript or the follow-up). */
export function steerEventText(text: string): string {
  return text.length > STEER_LIMITS.eventText
    ? `${text.slice(0, STEER_LIMITS.eventText)}… (${text.length} chars)`
    : text;
}
