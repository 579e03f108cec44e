import { describe, expect, it } from 'vitest';
import { JUDGE_SYSTEM, withJudgement, type AskJson } from '../../src/domain/approval.js';

// The judge is asked to start with "approve" or "deny" and say why in at most three sentences
// (JUDGE_SYSTEM): a reply that does not fit is an abstention, never the recommendation a person reads.

const ASK: AskJson = {
  task: 'f',
  issue: 'fix task needs a yes before it runs',
  why: 'roster entry "paid" is billed per call (api)',
  route: 'big-1 (gateway/builtin, roster entry paid)',
  recommendation: 'approve: it names what it may change and gaffer can check the result',
  pros: [],
  cons: [],
  blocking: true,
  judge_abstained: true,
  answer: null,
};

describe("the judge's reply is held to its contract", () => {
  it('the prompt asks for what the check reads', () => {
    expect(JUDGE_SYSTEM).toContain('Start with "approve" or "deny"');
    expect(JUDGE_SYSTEM).toContain('at most three sentences');
  });

  it.each([
    ['done', 'it does not start with "approve" or "deny": "done"'],
    ['', 'an empty answer'],
    ['  \n ', 'an empty answer'],
    ['Sure! Here is my recommendation: approve.', 'it does not start with "approve" or "deny"'],
    ['approved', 'it does not start with "approve" or "deny"'],
    ['deny', 'it gives no reason after "deny"'],
    ['Approve.', 'it gives no reason after "Approve"'],
    [`approve: ${'it is fine. '.repeat(60)}`, 'characters, more than the 600 (three sentences) it is asked for'],
  ])('reply %#: abstains, the code-only recommendation stays, and `judge` says why', (reply, why) => {
    const judged = withJudgement(ASK, 'gw-judge', reply);
    expect(judged).toMatchObject({ recommendation: ASK.recommendation, judge_abstained: true });
    expect(judged.judge).toMatch(/^gw-judge abstained: /);
    expect(judged.judge).toContain(why);
  });

  it.each([
    'approve: it changes one named file and the result is verified.',
    'Deny — verify is off, so nothing would prove the result.',
    '**Approve**: the task is read-only.',
    '  deny. It is billed per call and the cheaper rung could do it.',
  ])('%j fits: it is the recommendation, drafted by the judge', (reply) => {
    expect(withJudgement(ASK, 'gw-judge', reply)).toMatchObject({
      recommendation: reply.trim(),
      judge_abstained: false,
      judge: 'gw-judge',
    });
  });

  it('a failed call abstains with its error', () => {
    expect(withJudgement(ASK, 'gw-judge', new Error('HTTP 500'))).toMatchObject({
      judge_abstained: true,
      judge: 'gw-judge abstained: HTTP 500',
      recommendation: ASK.recommendation,
    });
  });
});
