import { runDoctor, type DoctorReport } from '../../../engine/maintenance/doctor.js';
import type { CliContext } from '../cli-context.js';
import { renderSpine } from '../render-spine.js';

/** `gaffer doctor`: the effective config with each value's source, the routing spine, and every check; exit 1 when one fails. */
export async function doctorCommand(cli: CliContext, flags: { workspace?: string }): Promise<number> {
  const report = await runDoctor({ dataDir: cli.dataDir, configPath: cli.configPath, workspace: flags.workspace });
  cli.out(cli.json ? JSON.stringify(report, null, 2) : renderDoctor(report));
  return report.checks.some((c) => c.status === 'fail') ? 1 : 0;
}

/** The human form: config values aligned with their sources, the routing spine, then one line per check and its fix. */
export function renderDoctor(report: DoctorReport): string {
  const lines = [
    `data dir: ${report.config.data_dir}`,
    `config file: ${report.config.file ?? 'none (defaults and the environment)'}`,
    '',
    'effective config:',
  ];
  const entries = Object.entries(report.config.values);
  const width = Math.max(...entries.map(([k]) => k.length));
  for (const [key, { value, source }] of entries)
    lines.push(`  ${key.padEnd(width)}  ${value === null ? '-' : String(value)}  (${source})`);
  lines.push('', ...renderSpine(report.spine));
  lines.push('', 'checks:');
  const nameWidth = Math.max(...report.checks.map((c) => c.name.length));
  for (const check of report.checks) {
    lines.push(`  ${check.status.padEnd(4)}  ${check.name.padEnd(nameWidth)}  ${check.detail}`);
    if (check.fix !== null && check.status !== 'ok')
      lines.push(`  ${''.padEnd(4)}  ${''.padEnd(nameWidth)}  fix: ${check.fix}`);
  }
  const failed = report.checks.filter((c) => c.status === 'fail').length;
  const warned = report.checks.filter((c) => c.status === 'warn').length;
  lines.push(
    '',
    failed > 0
      ? `${failed} check(s) failed${warned > 0 ? `, ${warned} warning(s)` : ''}`
      : warned > 0
        ? `all checks pass, ${warned} warning(s)`
        : 'all checks pass',
  );
  return lines.join('\n');
}
