import type { Document } from 'bson';
import { wireError } from './errors.ts';

/** The `data` of a `failCommand` fail point, as the server's test interface takes it. */
export interface FailCommandData {
  failCommands: string[];
  errorCode?: number;
  errorLabels?: string[];
  closeConnection?: boolean;
  blockConnection?: boolean;
  blockTimeMS?: number;
  writeConcernError?: Document;
  appName?: string;
}

/** What the fail point makes of one command. */
export interface FailureAction {
  blockMs: number;
  closeConnection: boolean;
  errorCode?: number;
  errorLabels?: string[];
  writeConcernError?: Document;
}

/**
 * The server's fail points this primary has, with the modes the server takes
 * (`'alwaysOn'`, `'off'`, `{ times: n }`, `{ skip: n }`; given both, `times`
 * alone, as the server reads them): `failCommand`
 * (never failing `configureFailPoint` itself), and
 * `onPrimaryTransactionalWrite` with `closeConnection`, which drops the
 * connection after a retryable write was applied, before its answer.
 */
export class FailPoints {
  private data: FailCommandData | undefined;
  private times = Number.POSITIVE_INFINITY;
  private skip = 0;
  private afterWrite: { times: number } | undefined;

  configure(body: Document): Document {
    const mode = body.mode;
    const name = body.configureFailPoint;
    if (name === 'onPrimaryTransactionalWrite') {
      const closes = (body.data as { closeConnection?: unknown } | undefined)?.closeConnection === true;
      this.afterWrite = mode === 'off' || !closes ? undefined : { times: timesOf(mode) };
      return { count: 0 };
    }
    const data = body.data as FailCommandData | undefined;
    if (name !== 'failCommand') throw wireError(2, `Cannot find failpoint: ${String(name)}`);
    if (mode === 'off') {
      this.data = undefined;
      return { count: 0 };
    }
    if (!data || !Array.isArray(data.failCommands)) throw wireError(2, "'failCommands' must be an array of strings");
    this.data = data;
    this.times = Number.POSITIVE_INFINITY;
    this.skip = 0;
    if (typeof mode === 'object' && mode !== null) {
      // As the server's parser reads a mode: `times` when it is given (a `skip` beside it is ignored), else
      // `skip` (then on for good).
      if ('times' in mode) this.times = countOf(mode, 'times');
      else if ('skip' in mode) this.skip = countOf(mode, 'skip');
      else throw wireError(2, MODES);
    } else if (mode !== 'alwaysOn') {
      throw wireError(2, `unknown mode: ${JSON.stringify(mode)}`);
    }
    return { count: 0 };
  }

  /** Whether `onPrimaryTransactionalWrite` drops the connection of the retryable write just applied. */
  takeAfterWrite(): boolean {
    if (!this.afterWrite) return false;
    this.afterWrite.times -= 1;
    if (this.afterWrite.times <= 0) this.afterWrite = undefined;
    return true;
  }

  /** The failure for a command named `name` from a client called `appName`, if the fail point takes it. */
  take(sentName: string, appName: string | undefined): FailureAction | undefined {
    const data = this.data;
    const name = CANONICAL_NAMES[sentName] ?? sentName;
    if (!data || name === 'configureFailPoint' || !data.failCommands.includes(name)) return undefined;
    if (data.appName !== undefined && data.appName !== appName) return undefined;
    if (this.skip > 0) {
      this.skip -= 1;
      return undefined;
    }
    this.times -= 1;
    if (this.times <= 0) this.data = undefined;
    return {
      blockMs: data.blockConnection ? Number(data.blockTimeMS ?? 0) : 0,
      closeConnection: data.closeConnection === true,
      ...(data.errorCode === undefined ? {} : { errorCode: data.errorCode }),
      ...(data.errorLabels === undefined ? {} : { errorLabels: data.errorLabels }),
      ...(data.writeConcernError === undefined ? {} : { writeConcernError: data.writeConcernError }),
    };
  }
}

const MODES = "'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or '{activationProbability:p}'";

/** A mode's `times` or `skip`, refused as the server refuses it when negative. */
function countOf(mode: object, field: 'times' | 'skip'): number {
  const count = Number((mode as Record<string, unknown>)[field]);
  if (!Number.isInteger(count) || count < 0) throw wireError(2, `'${field}' option to 'mode' must be positive`);
  return count;
}

/** Commands sent under another of their names: the server's fail point matches a command by its own name. */
const CANONICAL_NAMES: Readonly<Record<string, string>> = { ismaster: 'isMaster' };

function timesOf(mode: unknown): number {
  if (mode === 'alwaysOn') return Number.POSITIVE_INFINITY;
  const times = (mode as { times?: unknown } | null)?.times;
  if (typeof times !== 'number') throw wireError(2, `unknown mode: ${JSON.stringify(mode)}`);
  return times;
}
