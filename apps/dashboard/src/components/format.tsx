import type { JobState } from '@workq/core';

/** The states in the order an operator reads them: waiting, running, then how jobs ended. */
export const STATE_ORDER: readonly JobState[] = ['scheduled', 'ready', 'active', 'completed', 'dead', 'cancelled'];

/** A date as local time, to the second; `—` for none. */
export function formatTime(value: Date | string | null | undefined): string {
  if (value === null || value === undefined) return '—';
  const date = new Date(value);
  return date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/** How long ago (or ahead) `value` is, in the largest whole unit. */
export function relativeTime(value: Date | string, now = Date.now()): string {
  const ms = new Date(value).getTime() - now;
  const abs = Math.abs(ms);
  const [amount, unit] =
    abs < 60_000
      ? [Math.round(abs / 1000), 's']
      : abs < 3_600_000
        ? [Math.round(abs / 60_000), 'min']
        : abs < 86_400_000
          ? [Math.round(abs / 3_600_000), 'h']
          : [Math.round(abs / 86_400_000), 'd'];
  return ms <= 0 ? `${amount} ${unit} ago` : `in ${amount} ${unit}`;
}

/** A duration in milliseconds, readable. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
}

export function StateBadge(props: { state: string }) {
  return <span class={`state state-${props.state}`}>{props.state}</span>;
}

/** A JSON value, indented; `undefined` shows as a muted dash. */
export function JsonView(props: { value: unknown; label?: string }) {
  if (props.value === undefined) return <p class="muted">—</p>;
  return (
    <pre class="json" title={props.label}>
      {JSON.stringify(props.value, null, 2)}
    </pre>
  );
}

/**
 * A failed read or action. An outage (the server or its store out of reach) is said as one, in a banner
 * that stays until a read succeeds; the page keeps what it read before.
 */
export function ErrorNote(props: { error: string | undefined; outage?: boolean }) {
  if (!props.error) return null;
  return (
    <p class={props.outage ? 'error outage' : 'error'} role="alert" data-outage={props.outage ? '' : undefined}>
      {props.outage && <strong>Outage: </strong>}
      {props.error}
    </p>
  );
}
