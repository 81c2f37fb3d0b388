import { useState } from 'preact/hooks';
import { useLoad } from '../load.ts';
import { Link } from '../router.tsx';
import { useApi } from '../use-api.ts';
import { ErrorNote, StateBadge } from './format.tsx';

/** Children read per parent: the rest of a wide flow is counted, and its page lists them. */
const CHILDREN_SHOWN = 100;

/** Levels drawn open at first; deeper parents open on a click, each one more read. */
const OPEN_LEVELS = 2;

/**
 * A job's flow below it, as a tree: each child with its type, state and a link to its page, in enqueue order,
 * a child with children of its own drawn below it (open for the first levels, then on a click).
 */
export function FlowTree(props: { id: string; childCount: number; level?: number }) {
  const api = useApi();
  const level = props.level ?? 1;
  const loaded = useLoad(() => api.jobs.children.query({ id: props.id, limit: CHILDREN_SHOWN }), [props.id], true);
  if (!loaded.data) {
    return loaded.error ? <ErrorNote error={loaded.error} outage={loaded.outage} /> : <p class="muted">Loading…</p>;
  }
  const more = props.childCount - loaded.data.length;
  return (
    <ul class="flow-tree" aria-label={level === 1 ? 'Flow' : undefined}>
      {loaded.data.map((child) => (
        <FlowNode key={child.id} child={child} level={level} />
      ))}
      {more > 0 && <li class="muted">… and {more} more</li>}
    </ul>
  );
}

function FlowNode(props: { child: { id: string; name: string; state: string; childCount?: number }; level: number }) {
  const { child, level } = props;
  const [open, setOpen] = useState(level < OPEN_LEVELS);
  const childCount = child.childCount ?? 0;
  return (
    <li data-state={child.state}>
      <span class="flow-node">
        <Link to={`/jobs/${encodeURIComponent(child.id)}`}>{child.name}</Link>{' '}
        <span class="mono muted small">{child.id}</span> <StateBadge state={child.state} />
        {childCount > 0 && !open && (
          <button type="button" class="link" onClick={() => setOpen(true)}>
            {childCount} children
          </button>
        )}
      </span>
      {childCount > 0 && open && <FlowTree id={child.id} childCount={childCount} level={level + 1} />}
    </li>
  );
}
