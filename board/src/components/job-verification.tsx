import { duration } from '../format.js';
import { Fact, Tail } from './job-fact.js';
import { StatusPill } from './status.js';
import type { FullResult, Verification } from './job-types.js';

/**
 * The verification (spec 03): what ran, its reading, the failures split into new (the work broke
 * them), pre-existing (failing at the checkpoint too) and flaky (passed on a rerun), every round
 * the fixers took, and the output tail.
 */
export function JobVerification({ result, live }: { result: FullResult | undefined; live: boolean }) {
  const v = result?.verification ?? null;
  return (
    <section aria-labelledby="job-verification-h">
      <h2 id="job-verification-h">Verification</h2>
      {v === null ? (
        <p class="muted">{live ? 'Not run yet.' : 'No verification ran.'}</p>
      ) : (
        <VerificationBody v={v} result={result} />
      )}
    </section>
  );
}

function VerificationBody({ v, result }: { v: Verification; result: FullResult | undefined }) {
  const reading = !v.ran
    ? 'not run'
    : v.inconclusive
      ? 'inconclusive'
      : v.ok === true
        ? 'pass'
        : v.ok === false
          ? 'fail'
          : 'unknown';
  const pill = reading === 'pass' ? 'pass' : reading === 'fail' ? 'fail' : 'ambiguous';
  const rounds = [...(v.previous ?? []), { summary: v.summary, failures: v.failures }];
  return (
    <>
      <p class="row">
        <StatusPill value={pill} label={reading} />
        <strong>{v.summary}</strong>
        {v.blocking ? <span>blocking</span> : v.ran && v.ok === false ? <span class="muted">not blocking</span> : null}
      </p>
      {v.ran ? (
        <Ran v={v} rounds={rounds} result={result} />
      ) : (
        <>
          <p class="muted">
            Mode {v.mode}
            {v.command ? (
              <>
                {' '}
                · <code>{v.command}</code>
              </>
            ) : (
              ''
            )}
            {v.could_not_start ? ' · it could not start' : ''}
          </p>
          {v.output_tail && <OutputTail text={v.output_tail} />}
        </>
      )}
    </>
  );
}

function Ran({
  v,
  rounds,
  result,
}: {
  v: Verification;
  rounds: { summary: string; failures: string[] }[];
  result: FullResult | undefined;
}) {
  return (
    <>
      <dl class="job-facts">
        <Fact term="Command">{v.command ? <code>{v.command}</code> : '—'}</Fact>
        <Fact term="Mode">
          {v.mode}
          {v.kind && v.kind !== v.mode ? ` · ${v.kind}` : ''}
          {v.scope ? ` · ${v.scope} tests` : ''}
        </Fact>
        <Fact term="Exit code">{v.exit_code === null ? '—' : String(v.exit_code)}</Fact>
        <Fact term="Took">
          {duration(v.duration_s)}
          {v.timed_out ? ' (timed out)' : ''}
        </Fact>
        <Fact term="Runs">{String(v.attempts)}</Fact>
        {v.limit && <Fact term="Hit its limit">{v.limit}</Fact>}
        {v.could_not_start && <Fact term="Could not start">yes</Fact>}
      </dl>
      <div class="job-failures">
        <FailureList
          id="job-new-failures"
          title="New failures"
          hint="the work broke these"
          items={v.new_failures}
          tone="bad"
        />
        <FailureList
          id="job-pre-existing"
          title="Pre-existing failures"
          hint="failing at the checkpoint too"
          items={v.pre_existing}
          tone="warn"
        />
        <FailureList id="job-flaky" title="Flaky" hint="failed, then passed on a rerun" items={v.flaky} tone="muted" />
      </div>
      <Extras v={v} />
      {rounds.length > 1 && (
        <>
          <h3>Every round ({rounds.length})</h3>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Every round">
            <table class="job-rounds">
              <thead>
                <tr>
                  <th scope="col">Round</th>
                  <th scope="col">Summary</th>
                  <th scope="col">Failures</th>
                </tr>
              </thead>
              <tbody>
                {rounds.map((r, i) => (
                  <tr key={i}>
                    <td>
                      {i === 0
                        ? 'after the workers'
                        : i === rounds.length - 1
                          ? `after fix round ${i} (last)`
                          : `after fix round ${i}`}
                    </td>
                    <td>{r.summary}</td>
                    <td>{r.failures.length > 0 ? r.failures.join(', ') : '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      {result?.convergence && (
        <p>
          Fix rounds {result.convergence.converged ? 'converged' : 'did not converge'} ({result.convergence.confidence}{' '}
          confidence): {result.convergence.reason}
          {result.stopped_by === 'convergence' ? ' — no further round was run.' : ''}
        </p>
      )}
      {v.output_tail && <OutputTail text={v.output_tail} />}
    </>
  );
}

function OutputTail({ text }: { text: string }) {
  return (
    <>
      <h3>Output tail</h3>
      <Tail class="job-output" label="Verification output tail" text={text} />
    </>
  );
}

function FailureList({
  id,
  title,
  hint,
  items,
  tone,
}: {
  id: string;
  title: string;
  hint: string;
  items: string[];
  tone: 'bad' | 'warn' | 'muted';
}) {
  return (
    <div class={`job-failure-list job-${tone}`} role="group" aria-labelledby={id}>
      <h3 id={id}>
        {title} ({items.length})
      </h3>
      <p class="muted">{hint}</p>
      {items.length === 0 ? (
        <p>none</p>
      ) : (
        <ul>
          {items.map((f) => (
            <li key={f}>
              <code>{f}</code>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** The rest of what the verification says when it says it: related tests, tests the work touched or weakened, the checkpoint's tests, sandbox refusals. */
function Extras({ v }: { v: Verification }) {
  const o = v.original_tests;
  return (
    <>
      {v.related_files && v.related_files.length > 0 && <p>Related tests run: {v.related_files.join(', ')}</p>}
      {v.confirms_related && <p>Confirming the related run: {v.confirms_related.summary}</p>}
      {v.tests_touched && v.tests_touched.length > 0 && <p>Tests the work edited: {v.tests_touched.join(', ')}</p>}
      {v.tests_weakened && v.tests_weakened.length > 0 && (
        <p class="error-box">Tests the work removed or weakened: {v.tests_weakened.join(', ')}</p>
      )}
      {o && (
        <p>
          The checkpoint's own tests
          {o.command ? (
            <>
              {' '}
              (<code>{o.command}</code>)
            </>
          ) : (
            ''
          )}
          : {o.ran ? o.summary : 'not run'}
          {o.failures.length > 0 ? ` — failing: ${o.failures.join(', ')}` : ''}
          {o.blocking ? ' (blocking)' : ''}
        </p>
      )}
      {v.output_matched === false && <p>The output did not match what was expected.</p>}
      {v.sandbox_refused && v.sandbox_refused.length > 0 && <p>The sandbox refused: {v.sandbox_refused.join(', ')}</p>}
    </>
  );
}
