/** Counts handler starts per job number, to prove each job ran exactly once. */
export class JobTracker {
  private readonly seen: Uint8Array;
  readonly startedAt: Float64Array;
  handled = 0;
  duplicates = 0;
  unknown = 0;

  constructor(readonly expected: number) {
    this.seen = new Uint8Array(expected);
    this.startedAt = new Float64Array(expected);
  }

  readonly onJob = (n: number): void => {
    if (!Number.isInteger(n) || n < 0 || n >= this.expected) {
      this.unknown++;
      return;
    }
    if (this.seen[n] === 1) {
      this.duplicates++;
      return;
    }
    this.seen[n] = 1;
    this.startedAt[n] = performance.now();
    this.handled++;
  };

  get done(): boolean {
    return this.handled >= this.expected;
  }

  /** Throws unless every job ran once and the store shows `completed` of them done. */
  verify(completed: number, expectedCompleted = this.expected): void {
    const problems: string[] = [];
    if (this.handled !== this.expected) problems.push(`handled ${this.handled} of ${this.expected}`);
    if (this.duplicates > 0) problems.push(`${this.duplicates} duplicate deliveries`);
    if (this.unknown > 0) problems.push(`${this.unknown} unknown jobs`);
    if (completed !== expectedCompleted)
      problems.push(`store shows ${completed} completed, expected ${expectedCompleted}`);
    if (problems.length > 0) throw new Error(`check failed: ${problems.join('; ')}`);
  }

  /**
   * For a run that stopped waiting before every job was taken: throws unless only jobs n < `sent` ran, each at
   * most once, and the store shows exactly the started ones completed.
   */
  verifySent(completed: number, sent: number): void {
    const problems: string[] = [];
    let beyond = 0;
    for (let n = sent; n < this.expected; n++) if (this.seen[n] === 1) beyond++;
    if (beyond > 0) problems.push(`${beyond} jobs ran that were never sent`);
    if (this.duplicates > 0) problems.push(`${this.duplicates} duplicate deliveries`);
    if (this.unknown > 0) problems.push(`${this.unknown} unknown jobs`);
    if (completed !== this.handled) problems.push(`store shows ${completed} completed, ${this.handled} started`);
    if (problems.length > 0) throw new Error(`check failed: ${problems.join('; ')}`);
  }
}
