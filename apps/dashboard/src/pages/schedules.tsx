import { useState } from 'preact/hooks';
import { describeError } from '../api.ts';
import { ConfirmDialog, type PendingAction } from '../components/confirm.tsx';
import { ErrorNote, formatTime, relativeTime, StateBadge } from '../components/format.tsx';
import { useLive } from '../live.ts';
import { useLoad } from '../load.ts';
import { Link } from '../router.tsx';
import { useApi } from '../use-api.ts';

/** Schedules (the crontab's and those kept in the store): next run, last outcome; stored ones added and removed here. */
export function SchedulesPage() {
  const api = useApi();
  const live = useLive();
  const schedules = useLoad(() => api.admin.schedules.query(), []);
  const [pending, setPending] = useState<PendingAction | null>(null);
  const [formError, setFormError] = useState<string | undefined>();
  return (
    <section>
      <h1>Schedules</h1>
      <ErrorNote error={schedules.error} />
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Key</th>
              <th>When</th>
              <th>Enqueues</th>
              <th>Next run</th>
              <th>Last run</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {(schedules.data ?? []).map((schedule) => (
              <tr key={schedule.key}>
                <td class="mono">
                  {schedule.key} <span class="muted small">{schedule.source}</span>
                </td>
                <td class="mono">
                  {schedule.cron} <span class="muted">{schedule.timezone}</span>
                </td>
                <td>
                  {schedule.name}
                  {schedule.version !== null && <span class="muted"> v{schedule.version}</span>}
                </td>
                <td title={formatTime(schedule.nextRunAt)}>
                  {schedule.nextRunAt ? relativeTime(schedule.nextRunAt) : '—'}
                </td>
                <td>
                  {schedule.lastRun ? (
                    <>
                      <Link to={`/jobs/${encodeURIComponent(schedule.lastRun.jobId)}`}>
                        {relativeTime(schedule.lastRun.at)}
                      </Link>{' '}
                      <StateBadge state={schedule.lastRun.state ?? 'pruned'} />
                    </>
                  ) : (
                    <span class="muted">never</span>
                  )}
                </td>
                <td>
                  {schedule.source === 'stored' && (
                    <button
                      type="button"
                      class="link danger"
                      onClick={() =>
                        setPending({
                          question: `Remove the schedule "${schedule.key}"? Jobs it already enqueued stay.`,
                          confirmLabel: 'Remove',
                          run: async () =>
                            (await api.admin.removeSchedule.mutate({ key: schedule.key }))
                              ? 'Schedule removed.'
                              : 'It was already gone.',
                        })
                      }
                    >
                      Remove
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2 class="section">Add a schedule</h2>
      <form
        class="card stacked"
        onSubmit={async (event) => {
          event.preventDefault();
          const form = event.currentTarget;
          const data = new FormData(form);
          const text = (key: string) => String(data.get(key) ?? '').trim();
          try {
            const payloadText = text('payload');
            await api.admin.upsertSchedule.mutate({
              key: text('key'),
              cron: text('cron'),
              name: text('name'),
              ...(text('timezone') ? { timezone: text('timezone') } : {}),
              ...(text('version') ? { version: Number(text('version')) } : {}),
              payload: payloadText ? JSON.parse(payloadText) : {},
            });
            setFormError(undefined);
            form.reset();
            live.changed();
          } catch (error) {
            setFormError(error instanceof SyntaxError ? `Payload: ${error.message}` : describeError(error).message);
          }
        }}
      >
        <div class="row">
          <label>
            Key
            <input name="key" required placeholder="nightly-report" />
          </label>
          <label>
            Cron
            <input name="cron" required placeholder="0 3 * * *" />
          </label>
          <label>
            Time zone
            <input name="timezone" placeholder="UTC" />
          </label>
        </div>
        <div class="row">
          <label>
            Job type
            <input name="name" required />
          </label>
          <label>
            Version
            <input name="version" type="number" min={1} placeholder="newest" />
          </label>
        </div>
        <label>
          Payload (JSON)
          <textarea name="payload" rows={3} placeholder="{}" />
        </label>
        <ErrorNote error={formError} />
        <div class="actions">
          <button type="submit" class="primary">
            Add schedule
          </button>
        </div>
      </form>
      <ConfirmDialog action={pending} onClose={() => setPending(null)} />
    </section>
  );
}
