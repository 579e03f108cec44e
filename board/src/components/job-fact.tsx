import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/** One term and its value in a `<dl class="job-facts">`. */
export function Fact({ term, children }: { term: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** A scrolled text shown at its end, as a tail reads (a focusable region, so a keyboard scrolls it too). */
export function Tail({ text, label, class: cls }: { text: string; label: string; class?: string }) {
  const ref = useRef<HTMLPreElement>(null);
  useEffect(() => {
    if (ref.current) ref.current.scrollTop = ref.current.scrollHeight;
  }, [text]);
  return (
    <pre ref={ref} class={cls} tabIndex={0} role="region" aria-label={label}>
      {text}
    </pre>
  );
}
