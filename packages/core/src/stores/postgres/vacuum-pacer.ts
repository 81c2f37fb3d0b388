/**
 * How many changed rows the store lets pass between vacuums of the jobs
 * table. Each vacuum scans every index of the jobs table whole, finished jobs'
 * entries too, so its cost grows with the table's rows T; between vacuums,
 * every claim steps over the dead claim-index entries of the jobs claimed
 * since, so the claims' cost grows with the rows R the store waits for. The
 * sum per job is least at R = sqrt(8 · B · T · v / w), B jobs per claim, v
 * the vacuum's time per table row and w a claim's per dead entry (their
 * measured values are in docs/stores/postgres.md). For B = 10 and those values
 * that is R ≈ sqrt(2000 · T), within a factor of two of the least from 1 to
 * 100 jobs per claim.
 */
const VACUUM_BALANCE = 2000;

/**
 * Counts the rows that leave dead tuples (claims, completions, cancels,
 * prunes) and, past a threshold, runs one vacuum in the background: after
 * `everyRows` or sqrt(VACUUM_BALANCE · T) for a table of T rows, whichever is
 * more. T comes from each vacuum; before the first, from the catalog's
 * estimate, when it has one (a table filled and analyzed before this store
 * opened it, say). Zero turns it off.
 */
export class VacuumPacer {
  private rowsSince = 0;
  private rowsBetween: number;
  private sized = false;
  private running: Promise<void> | undefined;
  private stopped = false;

  /** `vacuum` vacuums the table and resolves to its estimated rows; `estimateRows` only reads that estimate. */
  constructor(
    private readonly everyRows: number,
    private readonly vacuum: () => Promise<number>,
    private readonly estimateRows: () => Promise<number>,
  ) {
    this.rowsBetween = everyRows;
  }

  noteChangedRows(count: number): void {
    if (this.everyRows === 0 || this.stopped) return;
    this.rowsSince += count;
    if (this.rowsSince < this.rowsBetween || this.running) return;
    // Housekeeping only: a failed vacuum changes nothing and is tried again later.
    this.running = this.vacuumIfDue()
      .catch(() => undefined)
      .finally(() => {
        this.running = undefined;
      });
  }

  /** Starts no more vacuums; resolves once the one running, if any, is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async vacuumIfDue(): Promise<void> {
    if (!this.sized) {
      this.sized = true;
      this.rowsBetween = this.rowsBetweenFor(await this.estimateRows());
      if (this.rowsSince < this.rowsBetween || this.stopped) return;
    }
    this.rowsSince = 0;
    this.rowsBetween = this.rowsBetweenFor(await this.vacuum());
  }

  private rowsBetweenFor(tableRows: number): number {
    return Math.max(this.everyRows, Math.round(Math.sqrt(VACUUM_BALANCE * tableRows)));
  }
}
