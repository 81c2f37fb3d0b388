import type { JobError } from '@workq/core';
import { formatTime } from './format.tsx';

/**
 * Every failed attempt the job keeps (newest first): the error's class, message, when, whether it was
 * permanent or recorded by the engine (a lost lease), and the handler's stack, folded.
 */
export function AttemptTimeline(props: { errors: readonly JobError[] }) {
  if (props.errors.length === 0) return null;
  return (
    <section class="card" aria-label="Failed attempts">
      <h2>Failed attempts</h2>
      <ol class="attempts" reversed>
        {[...props.errors].reverse().map((error) => (
          <li key={`${error.attempt}-${String(error.at)}`} data-attempt={error.attempt}>
            <strong>Attempt {error.attempt}</strong>{' '}
            <span class="muted small">
              {formatTime(error.at)}
              {error.name ? ` · ${error.name}` : ''}
              {error.code ? ` · ${error.code}` : ''}
              {error.permanent ? ' · permanent' : ''}
            </span>
            <p class="attempt-message">{error.message}</p>
            {error.stack && (
              <details>
                <summary>Stack</summary>
                <pre class="json">{error.stack}</pre>
              </details>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}
