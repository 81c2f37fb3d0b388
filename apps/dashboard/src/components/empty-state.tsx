/**
 * What an empty store shows instead of an empty table: how to enqueue the
 * first job, from TypeScript with the SDK and from anything with curl, with
 * this server's own address filled in.
 */
export function EnqueueFirstJob(props: { name?: string }) {
  const name = props.name ?? 'imageConvert';
  const sdk = `import { createClient } from '@workq/sdk';
import { jobs } from './jobs.ts'; // your catalog of defineJob(...)

const sdk = createClient({ url: '${location.origin}', jobs, token: process.env.WORKQ_TOKEN });
await sdk.enqueue.${name}({ /* payload */ });`;
  const curl = `curl -sS -X POST ${location.origin}/v1/jobs/${name} \\
  -H 'content-type: application/json' \\
  -H "authorization: Bearer $WORKQ_TOKEN" \\
  -d '{"version": 1, "payload": {}}'`;
  return (
    <div class="card empty-state" data-testid="empty-state">
      <h2>No jobs yet</h2>
      <p>Enqueue the first one from your code with the SDK:</p>
      <pre class="code">{sdk}</pre>
      <p>or from any language over HTTP (the payload is checked against the type's registered schema):</p>
      <pre class="code">{curl}</pre>
      <p class="muted small">Jobs appear here as they arrive; a worker started with sdk.consume runs them.</p>
    </div>
  );
}
