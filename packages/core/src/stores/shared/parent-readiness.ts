/**
 * The listeners of `FlowStore.onParentsReady` on one store object, told after each of its operations that made
 * parents ready (once that change is durable), with the parents' names.
 */
export class ParentReadiness {
  private readonly listeners = new Set<(names: readonly string[]) => void>();

  subscribe(listener: (names: readonly string[]) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Tells every listener of `names`, when there are any. */
  tell(names: readonly string[]): void {
    if (names.length === 0) return;
    for (const listener of this.listeners) listener(names);
  }
}
