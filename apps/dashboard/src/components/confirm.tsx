import { useState } from 'preact/hooks';
import { describeError } from '../api.ts';
import { useLive } from '../live.ts';

/** An action that waits for a confirmation which says what it will do, e.g. "Retry 12 dead jobs". */
export interface PendingAction {
  question: string;
  confirmLabel: string;
  run: () => Promise<string>;
}

/**
 * The confirmation dialog of a pending action; after it ran, its outcome (or
 * error) until dismissed, and then the page reloads what it shows.
 */
export function ConfirmDialog(props: { action: PendingAction | null; onClose: () => void }) {
  const live = useLive();
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ text: string; failed: boolean } | null>(null);
  if (!props.action && !outcome) return null;
  const close = () => {
    setOutcome(null);
    props.onClose();
    live.changed();
  };
  return (
    <div class="backdrop">
      <div class="dialog card" role="dialog" aria-modal="true" aria-label="Confirm">
        {outcome ? (
          <>
            <p class={outcome.failed ? 'error' : undefined}>{outcome.text}</p>
            <div class="actions">
              <button type="button" class="primary" onClick={close}>
                OK
              </button>
            </div>
          </>
        ) : (
          <>
            <p>{props.action?.question}</p>
            <div class="actions">
              <button type="button" onClick={close} disabled={busy}>
                Keep as is
              </button>
              <button
                type="button"
                class="primary"
                disabled={busy}
                onClick={async () => {
                  if (!props.action) return;
                  setBusy(true);
                  try {
                    setOutcome({ text: await props.action.run(), failed: false });
                  } catch (error) {
                    setOutcome({ text: describeError(error).message, failed: true });
                  } finally {
                    setBusy(false);
                  }
                }}
              >
                {props.action?.confirmLabel}
              </button>
            </div>
          </>
        )}
      </div>
    </div>
  );
}

/** "1 job", "3 jobs". */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
