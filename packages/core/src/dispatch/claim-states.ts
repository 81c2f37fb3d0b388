/**
 * The states one claim request goes through in the dispatcher (`ClaimDispatcher.claim`), from its arrival
 * to its answer:
 *
 * | state       | what the claim does there                                          | event         | next        |
 * | ----------- | ------------------------------------------------------------------ | ------------- | ----------- |
 * | `starting`  | sends its acks to the store, or holds them for its first attempt   | `started`     | `querying`  |
 * |             | to carry; writes its worker's presence                             |               |             |
 * | `querying`  | one store attempt: completes the carried acks and leases up to its | `found`       | `answered`  |
 * |             | limit (skipped right after a handoff, when it would find nothing)  | `mayNotWait`  | `answered`  |
 * |             |                                                                    | `foundNone`   | `parked`    |
 * | `parked`    | waits, where enqueues on this server can hand it their jobs, for a | `handedOver`  | `answered`  |
 * |             | wake-up, its poll interval, its type's next rate-limited start or  | `stopped`     | `answered`  |
 * |             | its deadline; answers without waiting when its acks found their    | `leasesLost`  | `answered`  |
 * |             | leases lost; then withdraws, collecting what it was handed         | `clientGone`  | `answered`  |
 * |             |                                                                    | `woken`       | `querying`  |
 * | `answered`  | final: the jobs it found or was handed, or none                    |               |             |
 *
 * `found`: the attempt leased jobs. `mayNotWait`: it found none and may not wait (no time left, its client
 * gone, its worker stopping, or the server closing). `foundNone`: it found none and waits. Out of `parked`
 * the events are checked in the table's order: jobs handed over are answered even when the claim was also
 * stopped or its client left (they go back unstarted then); a deadline reached while parked is `woken` too,
 * so the claim looks once more before it answers. A store failure while querying rejects the claim, acks
 * and all, from whichever state it is in.
 */
export type ClaimState = 'starting' | 'querying' | 'parked' | 'answered';

/** What moves a claim from one state to the next (see `ClaimState`). */
export type ClaimEvent =
  | 'started'
  | 'found'
  | 'mayNotWait'
  | 'foundNone'
  | 'handedOver'
  | 'stopped'
  | 'leasesLost'
  | 'clientGone'
  | 'woken';

const TRANSITIONS: { readonly [S in ClaimState]: { readonly [E in ClaimEvent]?: ClaimState } } = {
  starting: { started: 'querying' },
  querying: { found: 'answered', mayNotWait: 'answered', foundNone: 'parked' },
  parked: {
    handedOver: 'answered',
    stopped: 'answered',
    leasesLost: 'answered',
    clientGone: 'answered',
    woken: 'querying',
  },
  answered: {},
};

/** The state `event` moves a claim in `state` to; throws on an event the table does not allow there. */
export function nextClaimState(state: ClaimState, event: ClaimEvent): ClaimState {
  const next = TRANSITIONS[state][event];
  if (next === undefined) throw new Error(`A claim cannot take the event "${event}" while ${state}.`);
  return next;
}
