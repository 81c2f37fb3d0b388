import { Ajv2020, type Format } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { linearRegExp } from './linear-patterns.ts';

/**
 * Formats whose valid values are short by their definition (a date, a time,
 * an address, a UUID, an email address, a host name), with a length no valid
 * value reaches: a longer string fails the format without running its
 * checks, which are linear but slow on text hundreds of kilobytes long.
 */
const SHORT_FORMAT_MAX_LENGTH = 512;
export const SHORT_FORMATS = [
  'date',
  'time',
  'date-time',
  'iso-time',
  'iso-date-time',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uuid',
] as const;

/**
 * Formats registered schemas may not use: `url` is checked by a pattern that
 * takes super-linear time on long text (ajv-formats); `uri` is the format
 * for URLs.
 */
export const REFUSED_FORMATS: ReadonlyMap<string, string> = new Map([
  ['url', 'its check takes super-linear time on long text; use "uri"'],
]);

/**
 * The Ajv instance that compiles registered payload schemas: JSON Schema
 * 2020-12, every error listed, formats checked, and every pattern run by the
 * linear-time engine (`linearRegExp`). `unicode: false`: string lengths
 * count UTF-16 code units, as Zod's `.min` and `.max` do (Ajv calls the
 * option deprecated, hence no logger: Ajv's only other messages are schema
 * warnings, which `strict: false` drops).
 */
export function createPayloadAjv(): Ajv2020 {
  const ajv = new Ajv2020({
    strict: false,
    allErrors: true,
    validateFormats: true,
    unicode: false,
    logger: false,
    code: { regExp: linearRegExp },
  });
  (addFormats as unknown as (ajv: Ajv2020) => void)(ajv);
  for (const name of SHORT_FORMATS) {
    const format = ajv.formats[name];
    if (format !== undefined) ajv.addFormat(name, boundedFormat(format));
  }
  // Compiles the JSON Schema meta-schema now, at start, rather than in the first registration's request.
  ajv.validateSchema({});
  return ajv;
}

/** `format` with strings longer than `SHORT_FORMAT_MAX_LENGTH` failing at once. */
function boundedFormat(format: Format): Format {
  const definition = typeof format === 'object' && !(format instanceof RegExp) ? format : { validate: format };
  const { validate } = definition;
  if (('async' in definition && definition.async) || typeof validate === 'boolean') return format;
  const pattern = typeof validate === 'string' ? new RegExp(validate) : validate;
  const test = typeof pattern === 'function' ? pattern : (text: string) => pattern.test(text);
  return {
    ...definition,
    type: 'string',
    validate: (text: string) => text.length <= SHORT_FORMAT_MAX_LENGTH && (test as (text: string) => boolean)(text),
  } as Format;
}
