import { useState } from 'preact/hooks';
import { describeError, type FieldIssue } from '../api.ts';
import { ConfirmDialog, type PendingAction } from '../components/confirm.tsx';
import { ErrorNote, JsonView } from '../components/format.tsx';
import { issuesByField, type JsonSchemaNode, readPayload, SchemaFields } from '../components/schema-form.tsx';
import { useLive } from '../live.ts';
import { useLoad } from '../load.ts';
import { Link, navigate } from '../router.tsx';
import { useApi } from '../use-api.ts';

/**
 * Each type's registered schema versions side by side, each removable after a
 * confirmation, and an enqueue form generated from one of them.
 */
export function SchemasPage(props: { name: string | undefined; query: URLSearchParams }) {
  const api = useApi();
  const schemas = useLoad(() => api.schemas.list.query(), []);
  const [pending, setPending] = useState<PendingAction | null>(null);
  const names = [...new Set((schemas.data ?? []).map((entry) => entry.name))].sort();
  const name = props.name ?? names[0];
  const versions = (schemas.data ?? []).filter((entry) => entry.name === name).sort((a, b) => a.version - b.version);
  const stats = useLoad(() => api.admin.stats.query(), []);
  const readers = (stats.data?.consumers ?? []).filter((reader) => reader.name === name);
  const read = (version: number) => readers.some((r) => r.minVersion <= version && version <= r.maxVersion);
  // The form starts at the newest version a connected worker reads: a job of a newer one would wait.
  const newestRead = versions.filter((v) => read(v.version)).at(-1)?.version;
  const chosen = Number(props.query.get('version')) || newestRead || versions.at(-1)?.version;
  const entry = versions.find((v) => v.version === chosen);
  return (
    <section>
      <h1>Schemas</h1>
      <ErrorNote error={schemas.error} />
      {schemas.data && names.length === 0 && (
        <p class="muted">No schema is registered yet: producers and workers register theirs when they connect.</p>
      )}
      <nav class="tabs">
        {names.map((n) => (
          <Link key={n} to={`/schemas/${encodeURIComponent(n)}`} class={n === name ? 'active' : undefined}>
            {n}
          </Link>
        ))}
      </nav>
      {name && (
        <>
          <div class="versions-side">
            {versions.map((v) => (
              <div class="card" key={v.version}>
                <header class="row">
                  <h2>
                    v{v.version} <span class="muted small mono">{v.fingerprint.slice(0, 12)}</span>
                  </h2>
                  <span class="spacer" />
                  <button
                    type="button"
                    class="link danger"
                    data-remove-version={v.version}
                    onClick={() =>
                      setPending({
                        question: `Remove the schema of ${name} v${v.version} on every server? Payloads of v${v.version} are refused until a service registers it again; jobs of v${v.version} already waiting stay.`,
                        confirmLabel: 'Remove',
                        run: async () =>
                          (await api.admin.removeSchema.mutate({ name, version: v.version }))
                            ? 'Schema removed.'
                            : 'It was already gone.',
                      })
                    }
                  >
                    Remove
                  </button>
                </header>
                <JsonView value={v.jsonSchema} label={`${name} v${v.version} JSON Schema`} />
              </div>
            ))}
          </div>
          {entry && (
            <EnqueueForm
              key={`${name}@${entry.version}`}
              name={name}
              version={entry.version}
              versions={versions.map((v) => ({ version: v.version, read: read(v.version) }))}
              schema={entry.jsonSchema as JsonSchemaNode}
            />
          )}
        </>
      )}
      <ConfirmDialog action={pending} onClose={() => setPending(null)} />
    </section>
  );
}

function EnqueueForm(props: {
  name: string;
  version: number;
  /** Each registered version, and whether a connected worker reads it. */
  versions: { version: number; read: boolean }[];
  schema: JsonSchemaNode;
}) {
  const api = useApi();
  const live = useLive();
  const [issues, setIssues] = useState<FieldIssue[]>([]);
  const [error, setError] = useState<string | undefined>();
  const [created, setCreated] = useState<{ id: string; created: boolean } | null>(null);
  const editable = props.schema.type === 'object' && props.schema.properties !== undefined;
  return (
    <form
      class="card stacked enqueue"
      noValidate
      onSubmit={async (event) => {
        event.preventDefault();
        const form = event.currentTarget;
        setCreated(null);
        try {
          const payload = editable
            ? readPayload(form)
            : JSON.parse(String(new FormData(form).get('payload') ?? 'null') || 'null');
          const key = String(new FormData(form).get('idempotencyKey') ?? '').trim();
          // Checked first, so an invalid payload is an answer with its issues rather than a failed request.
          const check = await api.admin.checkPayload.mutate({ name: props.name, version: props.version, payload });
          if (!check.valid) {
            setIssues(check.issues);
            // The fields say what is wrong in words; the server's summary would repeat them as a validator writes them.
            setError(
              check.issues.length > 0 ? 'The payload is not valid: see the fields marked below.' : check.message,
            );
            return;
          }
          const result = await api.jobs.enqueue.mutate({
            name: props.name,
            version: props.version,
            payload,
            ...(key ? { options: { idempotencyKey: key } } : {}),
          });
          setIssues([]);
          setError(undefined);
          setCreated(result);
          live.changed();
        } catch (caught) {
          const described =
            caught instanceof SyntaxError ? { message: caught.message, issues: [] } : describeError(caught);
          setIssues(described.issues);
          setError(described.message);
        }
      }}
    >
      <header class="row">
        <h2>Enqueue a job: {props.name}</h2>
        <span class="spacer" />
        <label class="inline">
          Version
          <select
            value={String(props.version)}
            onChange={(event) =>
              navigate(`/schemas/${encodeURIComponent(props.name)}?version=${event.currentTarget.value}`, true)
            }
          >
            {props.versions.map(({ version, read }) => (
              <option key={version} value={String(version)}>
                v{version}
                {read ? ' (a worker reads it)' : ''}
              </option>
            ))}
          </select>
        </label>
      </header>
      {!props.versions.find((v) => v.version === props.version)?.read && (
        <p class="muted small" data-testid="unread-version">
          No connected worker reads v{props.version} of {props.name}: a job enqueued now waits until one does.
        </p>
      )}
      {editable ? (
        <SchemaFields schema={props.schema} errors={issuesByField(issues)} />
      ) : (
        <label>
          Payload (JSON)
          <textarea name="payload" rows={5} />
        </label>
      )}
      <label>
        Idempotency key <span class="muted small">optional</span>
        <input name="idempotencyKey" />
      </label>
      <ErrorNote error={error} />
      {created && (
        <p class="ok-text" role="status">
          {created.created ? 'Enqueued' : 'Already enqueued with that key'}:{' '}
          <Link to={`/jobs/${encodeURIComponent(created.id)}`}>{created.id}</Link>
        </p>
      )}
      <div class="actions">
        <button type="submit" class="primary">
          Enqueue
        </button>
      </div>
    </form>
  );
}
