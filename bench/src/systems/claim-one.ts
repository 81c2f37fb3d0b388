/**
 * The claim-latency probe every system shares: times one claim of a single
 * job (the claim alone), then finishes that job so the queue stays
 * consistent for the next probe.
 */
export async function timeClaimOne<J>(
  claim: () => Promise<J[]>,
  finish: (jobs: J[]) => Promise<void>,
): Promise<number> {
  const started = performance.now();
  const jobs = await claim();
  const elapsed = performance.now() - started;
  if (jobs.length !== 1) throw new Error(`claim returned ${jobs.length} jobs, expected 1`);
  await finish(jobs);
  return elapsed;
}
