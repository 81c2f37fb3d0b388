import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { describeError } from '../api.ts';
import { useLive } from '../live.ts';
import { navigate } from '../router.tsx';

/** An action that waits for a confirmation which says what it will do, e.g. "Retry 12 dead jobs". */
export interface PendingAction {
  question: string;
  confirmLabel: string;
  run: () => Promise<string>;
  /** Where the dashboard goes once a successful outcome is dismissed (a route), when the page's subject is gone. */
  thenGoTo?: string;
}

/**
 * The confirmation dialog of a pending action; after it ran, its outcome (or
 * error) until dismissed, and then the page reloads what it shows. It takes
 * the focus when it opens (on its safe choice, "Keep as is"), keeps Tab within
 * itself, closes on Escape, and gives the focus back to where it was.
 */
export function ConfirmDialog(props: { action: PendingAction | null; onClose: () => void }) {
  const live = useLive();
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<{ text: string; failed: boolean; goTo?: string | undefined } | null>(null);
  const dialog = useRef<HTMLDivElement>(null);
  const open = props.action !== null || outcome !== null;
  const close = () => {
    setOutcome(null);
    props.onClose();
    if (outcome?.goTo) navigate(outcome.goTo);
    live.changed();
  };
  useEffect(() => {
    if (!open) return;
    const returnTo = document.activeElement as HTMLElement | null;
    dialog.current?.querySelector<HTMLElement>('button')?.focus();
    return () => returnTo?.focus();
  }, [open]);
  // Escape closes it wherever the focus went (a click on the backdrop, say), unless its action is running. The
  // listener is added as the dialog is put in the page, not after the next frame as an effect would be: an Escape
  // pressed as soon as the dialog shows would otherwise be lost.
  const closeRef = useRef(close);
  closeRef.current = busy ? () => {} : close;
  useLayoutEffect(() => {
    if (!open) return;
    const onEscape = (event: KeyboardEvent) => {
      if (event.key !== 'Escape') return;
      event.preventDefault();
      closeRef.current();
    };
    document.addEventListener('keydown', onEscape);
    return () => document.removeEventListener('keydown', onEscape);
  }, [open]);
  useEffect(() => {
    if (outcome) dialog.current?.querySelector<HTMLElement>('button')?.focus();
  }, [outcome]);
  if (!open) return null;
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === 'Tab') {
      const buttons = [...(dialog.current?.querySelectorAll<HTMLElement>('button:not([disabled])') ?? [])];
      const at = buttons.indexOf(document.activeElement as HTMLElement);
      const next = buttons[(at + (event.shiftKey ? buttons.length - 1 : 1)) % buttons.length];
      event.preventDefault();
      next?.focus();
    }
  };
  return (
    <div class="backdrop">
      <div
        class="dialog card"
        role="dialog"
        aria-modal="true"
        aria-labelledby="dialog-text"
        ref={dialog}
        onKeyDown={onKeyDown}
      >
        {outcome ? (
          <>
            <p id="dialog-text" class={outcome.failed ? 'error' : undefined} role="status">
              {outcome.text}
            </p>
            <div class="actions">
              <button type="button" class="primary" onClick={close}>
                OK
              </button>
            </div>
          </>
        ) : (
          <>
            <p id="dialog-text">{props.action?.question}</p>
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
                    setOutcome({ text: await props.action.run(), failed: false, goTo: props.action.thenGoTo });
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
