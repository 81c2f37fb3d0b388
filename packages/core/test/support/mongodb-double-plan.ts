/** The driver double's query planner, which now lives in test support beside the wire-protocol primary. */
export type { PlanInput, PlannedIndex, QueryPlan } from '@workq/test-support';
export { impliesPartialFilter, planQuery } from '@workq/test-support';
