interface Waiting<In, Out> {
  items: readonly In[];
  resolve: (outputs: Out[]) => void;
  reject: (error: unknown) => void;
}

/**
 * Merges the batches that concurrent requests submit within one turn of the
 * event loop into store calls of up to `maxBatch` items, so many small
 * enqueues or acks cost one statement and one commit instead of one each.
 * Each caller gets back the outputs for its own items, in order; a failed
 * store call fails every caller whose items were in it.
 */
export class Coalescer<In, Out> {
  private waiting: Waiting<In, Out>[] = [];

  constructor(
    private readonly run: (items: In[]) => Promise<Out[]>,
    private readonly maxBatch: number,
  ) {}

  submit(items: readonly In[]): Promise<Out[]> {
    if (items.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      if (this.waiting.length === 0) setImmediate(() => this.flush());
      this.waiting.push({ items, resolve, reject });
    });
  }

  private flush(): void {
    const waiting = this.waiting;
    this.waiting = [];
    let group: Waiting<In, Out>[] = [];
    let size = 0;
    for (const entry of waiting) {
      if (size > 0 && size + entry.items.length > this.maxBatch) {
        void this.runGroup(group);
        group = [];
        size = 0;
      }
      group.push(entry);
      size += entry.items.length;
    }
    if (group.length > 0) void this.runGroup(group);
  }

  private async runGroup(group: Waiting<In, Out>[]): Promise<void> {
    try {
      const outputs: Out[] = [];
      // A single caller's batch may exceed maxBatch on its own; it is split, never merged.
      const items = group.flatMap((entry) => entry.items);
      for (let at = 0; at < items.length; at += this.maxBatch) {
        outputs.push(...(await this.run(items.slice(at, at + this.maxBatch))));
      }
      let at = 0;
      for (const entry of group) {
        entry.resolve(outputs.slice(at, at + entry.items.length));
        at += entry.items.length;
      }
    } catch (error) {
      for (const entry of group) entry.reject(error);
    }
  }
}
