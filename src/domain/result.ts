import type { ChangesJson } from '../evidence/types.js';

/** The `verification` JSON of spec 03. */
export interface VerificationJson {
  mode: 'off' | 'auto' | 'command' | 'configured';
  ran: boolean;
  /** true passed, false failed, null not verified (never "passed"). */
  ok: boolean | null;
  inconclusive: boolean;
  kind: string | null;
  command: string | null;
  scope: 'related' | 'all' | null;
  related_files?: string[];
  exit_code: number | null;
  timed_out: boolean;
  duration_s: number;
  blocking: boolean;
  summary: string;
  failures: string[];
  new_failures: string[];
  pre_existing: string[];
  pre_existing_only?: boolean;
  flaky: string[];
  output_matched?: boolean;
  output_tail: string;
  attempts: number;
  previous?: { summary: string; failures: string[] }[];
  /** Test files or runner config the workers edited (spec 03 "Test weakening"). */
  tests_touched?: string[];
  /** Tests that ran before the work and are gone or skipped after it. */
  tests_weakened?: string[];
}

export interface Uncertainty {
  code: string;
  detail: string;
  penalty: number;
}

/** The `proof` JSON of spec 03. */
export interface ProofJson {
  verdict: 'proved' | 'partial' | 'unproved' | 'contradicted';
  confidence: number;
  shown: string[];
  uncertainty: Uncertainty[];
}

export interface ConvergenceJson {
  converged: boolean;
  score: number;
  confidence: 'high' | 'medium';
  reason: string;
}

export interface CriteriaCheckJson {
  complete: boolean;
  met: string[];
  unmet: string[];
  unchecked: string[];
}

export interface TotalsJson {
  tool_calls: number;
  failed_calls: number;
  rounds: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  errors: number;
  cancelled: number;
}

/** What the engine stores on the job row as it learns it; the compact `result` minus `workers`. */
export interface JobResult {
  files_changed: string[];
  claimed_only: string[];
  changes: ChangesJson | null;
  verification: VerificationJson | null;
  criteria_check?: CriteriaCheckJson;
  convergence?: ConvergenceJson;
  stopped_by?: 'convergence';
  fix_rounds_run: number;
  proof: ProofJson | null;
  totals: TotalsJson;
  exit_code?: number;
}
