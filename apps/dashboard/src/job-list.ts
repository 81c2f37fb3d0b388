import type { QueueApi } from '@workq/sdk';

/** A page of the server's job list (`admin.jobs`) and one of its rows, as the router types them. */
export type JobRowPage = Awaited<ReturnType<QueueApi['admin']['jobs']['query']>>;
export type JobRow = JobRowPage['jobs'][number];
type JobsInput = Parameters<QueueApi['admin']['jobs']['query']>[0];

/** How many rows a page of the Jobs list shows. */
export const PAGE_SIZE = 50;

/** The Jobs list's filter, as it stands in the page's URL (empty text: not filtered on). */
export interface JobFilter {
  name: string;
  state: string;
  version: string;
  group: string;
  /** A job id or an idempotency key. */
  q: string;
  /** Created from / to, as a `datetime-local` field writes them (local time). */
  from: string;
  to: string;
}

export const FILTER_KEYS = ['name', 'state', 'version', 'group', 'q', 'from', 'to'] as const;

export function filterOf(query: URLSearchParams): JobFilter {
  const filter = {} as JobFilter;
  for (const key of FILTER_KEYS) filter[key] = query.get(key)?.trim() ?? '';
  return filter;
}

/** What the server is asked for the page that starts below `cursor` (the first page without one). */
export function jobsInput(filter: JobFilter, cursor?: string): JobsInput {
  const input: JobsInput = { limit: PAGE_SIZE };
  if (filter.name) input.name = filter.name;
  if (filter.state) input.state = filter.state as NonNullable<JobsInput['state']>;
  const version = Number(filter.version);
  if (filter.version && Number.isInteger(version)) input.version = version;
  if (filter.group) input.group = filter.group;
  if (filter.q) input.search = filter.q;
  const fromMs = filter.from ? new Date(filter.from).getTime() : Number.NaN;
  const toMs = filter.to ? new Date(filter.to).getTime() : Number.NaN;
  if (Number.isFinite(fromMs)) input.createdFromMs = Math.max(0, fromMs);
  if (Number.isFinite(toMs)) input.createdToMs = Math.max(0, toMs);
  if (cursor) input.cursor = cursor;
  return input;
}

/** One page of the list: one call, whatever the store holds. */
export function loadJobPage(api: QueueApi, filter: JobFilter, cursor?: string): Promise<JobRowPage> {
  return api.admin.jobs.query(jobsInput(filter, cursor));
}

/** Whether the filter names a set of jobs narrower than "every job": bulk actions apply only to such a set. */
export function isFiltered(filter: JobFilter): boolean {
  return FILTER_KEYS.some((key) => filter[key] !== '');
}

/** The filter in words, for a confirmation: "dead jobs of imageConvert v2 in group acme created since …". */
export function describeFilter(filter: JobFilter): string {
  const parts = [filter.state ? `${filter.state} jobs` : 'jobs in any state'];
  parts.push(filter.name ? `of ${filter.name}` : 'of every type');
  if (filter.version) parts.push(`v${filter.version}`);
  if (filter.group) parts.push(`in group "${filter.group}"`);
  if (filter.q) parts.push(`matching "${filter.q}"`);
  if (filter.from) parts.push(`created from ${filter.from.replace('T', ' ')}`);
  if (filter.to) parts.push(`created until ${filter.to.replace('T', ' ')}`);
  return parts.join(' ');
}
