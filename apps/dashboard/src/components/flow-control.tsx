import { useState } from 'preact/hooks';
import { describeError } from '../api.ts';
import { useLive } from '../live.ts';
import { useApi } from '../use-api.ts';
import { ErrorNote } from './format.tsx';

/** A job type's flow-control settings, as `admin.queues` lists them. */
export interface FlowSettings {
  paused: boolean;
  /** When the type's hold (`ctx.rateLimited`) ends; absent when it is not held. */
  heldUntil?: Date | string;
  limits: {
    concurrency: number | null;
    rateLimit: { max: number; perMs: number } | null;
    groupConcurrency: number | null;
    groupOrder: 'strict' | null;
  };
}

/** A limit field's number, or `null` (no limit) when left empty. */
function limitOf(data: FormData, key: string): number | null {
  const text = String(data.get(key) ?? '').trim();
  return text === '' ? null : Number(text);
}

/**
 * Pause or resume a job type, and edit its limits (kept in the store: every server honours them). Resume also
 * lifts a hold, so it is offered for a held type too.
 */
export function FlowControl(props: { name: string; settings: FlowSettings }) {
  const api = useApi();
  const live = useLive();
  const [editing, setEditing] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const { paused, heldUntil, limits } = props.settings;
  const stopped = paused || heldUntil !== undefined;
  const run = async (action: () => Promise<unknown>) => {
    try {
      await action();
      setError(undefined);
      setEditing(false);
    } catch (caught) {
      setError(describeError(caught).message);
    }
    live.changed();
  };
  const summary = [
    limits.concurrency !== null && `${limits.concurrency} at once`,
    limits.rateLimit && `${limits.rateLimit.max} per ${limits.rateLimit.perMs} ms`,
    limits.groupConcurrency !== null && `${limits.groupConcurrency} per group`,
    limits.groupOrder === 'strict' && 'strict order per group',
  ].filter(Boolean);
  return (
    <div class="flow">
      <div class="flow-row">
        <span class="muted small">{summary.length ? `Limits: ${summary.join(', ')}` : 'No limits'}</span>
        <span class="spacer" />
        <button type="button" class="link" onClick={() => setEditing(!editing)}>
          Limits
        </button>
        <button
          type="button"
          onClick={() =>
            run(() =>
              stopped ? api.admin.resume.mutate({ name: props.name }) : api.admin.pause.mutate({ name: props.name }),
            )
          }
          title={heldUntil !== undefined ? 'Lifts the hold as well as any pause: claims run now' : undefined}
        >
          {stopped ? 'Resume' : 'Pause'}
        </button>
      </div>
      {editing && (
        <form
          class="limits"
          onSubmit={(event) => {
            event.preventDefault();
            const data = new FormData(event.currentTarget);
            const max = limitOf(data, 'rateMax');
            const perMs = limitOf(data, 'ratePerMs');
            void run(() =>
              api.admin.setLimits.mutate({
                name: props.name,
                limits: {
                  concurrency: limitOf(data, 'concurrency'),
                  rateLimit: max !== null && perMs !== null ? { max, perMs } : null,
                  groupConcurrency: limitOf(data, 'groupConcurrency'),
                  groupOrder: data.get('groupOrder') === 'strict' ? 'strict' : null,
                },
              }),
            );
          }}
        >
          <label>
            Concurrency
            <input name="concurrency" type="number" min={1} defaultValue={String(limits.concurrency ?? '')} />
          </label>
          <label>
            Starts
            <input name="rateMax" type="number" min={1} defaultValue={String(limits.rateLimit?.max ?? '')} />
          </label>
          <label>
            per ms
            <input name="ratePerMs" type="number" min={1} defaultValue={String(limits.rateLimit?.perMs ?? '')} />
          </label>
          <label>
            Per group
            <input name="groupConcurrency" type="number" min={1} defaultValue={String(limits.groupConcurrency ?? '')} />
          </label>
          <label title="A failed job holds its group until it completes, dies or is cancelled (needs 1 per group)">
            <input name="groupOrder" type="checkbox" value="strict" defaultChecked={limits.groupOrder === 'strict'} />
            Strict order
          </label>
          <button type="submit" class="primary">
            Save
          </button>
        </form>
      )}
      <ErrorNote error={error} />
    </div>
  );
}
