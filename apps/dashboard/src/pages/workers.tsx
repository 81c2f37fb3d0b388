import { ErrorNote, relativeTime } from '../components/format.tsx';
import { useLoad } from '../load.ts';
import { Link } from '../router.tsx';
import { useApi } from '../use-api.ts';

/** The workers seen lately: host, pid, the types and versions they read, the jobs they hold, when last seen. */
export function WorkersPage() {
  const api = useApi();
  const workers = useLoad(() => api.admin.workers.query(), []);
  return (
    <section>
      <h1>Workers</h1>
      <ErrorNote error={workers.error} />
      {workers.data?.length === 0 && <p class="muted">No worker has claimed jobs lately.</p>}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Host</th>
              <th class="num">Pid</th>
              <th>Reads</th>
              <th>Holds</th>
              <th>Started</th>
              <th>Last seen</th>
            </tr>
          </thead>
          <tbody>
            {(workers.data ?? []).map((worker) => (
              <tr key={worker.id} title={worker.id}>
                <td>{worker.host}</td>
                <td class="num">{worker.pid ?? '—'}</td>
                <td>
                  {worker.names.join(', ')}{' '}
                  <span class="muted">
                    v{worker.versions[0]}
                    {worker.versions.length > 1 ? `–${worker.versions.at(-1)}` : ''}
                  </span>
                </td>
                <td>
                  {worker.activeJobIds.length === 0 && <span class="muted">idle</span>}
                  {worker.activeJobIds.slice(0, 5).map((id) => (
                    <div key={id} class="mono small">
                      <Link to={`/jobs/${encodeURIComponent(id)}`}>{id}</Link>
                    </div>
                  ))}
                  {worker.activeJobIds.length > 5 && <span class="muted">+{worker.activeJobIds.length - 5} more</span>}
                </td>
                <td>{worker.startedAt ? relativeTime(worker.startedAt) : '—'}</td>
                <td>{relativeTime(worker.lastSeenAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
