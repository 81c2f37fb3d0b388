/**
 * A job's event types as a subscriber saw them, with `enqueued` put back before `started` where the two came
 * the other way round: a job claimed the moment it is enqueued may show `started` first, even on one server
 * (docs/events.md, "Order"). Every other inversion is left for the test to see.
 */
export function eventTypes(events: readonly { type: string }[]): string[] {
  const types = events.map((event) => event.type);
  if (types[0] === 'started' && types[1] === 'enqueued') types.splice(0, 2, 'enqueued', 'started');
  return types;
}
