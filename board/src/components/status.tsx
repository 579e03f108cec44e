/** A status, verdict or outcome as a coloured pill that also says the word (colour is never the only signal). */
export function StatusPill({ value, label }: { value: string | null | undefined; label?: string }) {
  if (!value) return null;
  return <span class={`status ${value}`}>{label ?? value.replace(/_/g, ' ')}</span>;
}
