import type { FieldIssue } from '../api.ts';

/** The part of JSON Schema the form reads; anything else is edited as JSON text. */
export interface JsonSchemaNode {
  type?: string | string[];
  properties?: Record<string, JsonSchemaNode>;
  required?: string[];
  enum?: unknown[];
  description?: string;
  default?: unknown;
  format?: string;
  minimum?: number;
  maximum?: number;
}

const pathKey = (path: readonly string[]) => path.join('.');

/** The type a field is edited as: its schema's own type, ignoring `null` in a type list. */
function kindOf(node: JsonSchemaNode): string {
  if (node.enum) return 'enum';
  const types = Array.isArray(node.type) ? node.type.filter((t) => t !== 'null') : [node.type];
  return types.length === 1 && types[0] ? types[0] : 'json';
}

/** Issues by field: ajv names a missing property in its message, at its parent's path. */
export function issuesByField(issues: readonly FieldIssue[]): Map<string, string[]> {
  const byField = new Map<string, string[]>();
  for (const issue of issues) {
    const missing = /required property '([^']+)'/.exec(issue.message)?.[1];
    const key = pathKey(missing ? [...issue.path, missing] : issue.path);
    byField.set(key, [...(byField.get(key) ?? []), issue.message]);
  }
  return byField;
}

const FORMATS: Record<string, string> = {
  email: 'an email address',
  uri: 'a URL',
  url: 'a URL',
  'date-time': 'a date and time, e.g. 2026-01-31T09:30:00Z',
  date: 'a date, e.g. 2026-01-31',
  time: 'a time, e.g. 09:30:00',
  uuid: 'a UUID',
  ipv4: 'an IPv4 address',
  ipv6: 'an IPv6 address',
};

/** Each validator message a form shows, as a person would say it; patterns are never shown as regexes. */
const MESSAGES: [RegExp, (...parts: string[]) => string][] = [
  [/required property/, () => 'is required'],
  [/must match pattern/, () => 'is not in the form this field expects (see its description)'],
  [/must match format "([^"]+)"/, (format) => `must be ${FORMATS[format] ?? `in the ${format} format`}`],
  [/must be <= (\S+)/, (n) => `must be at most ${n}`],
  [/must be >= (\S+)/, (n) => `must be at least ${n}`],
  [/must be < (\S+)/, (n) => `must be less than ${n}`],
  [/must be > (\S+)/, (n) => `must be more than ${n}`],
  [/must NOT have fewer than (\d+) characters/, (n) => `must be at least ${n} characters long`],
  [/must NOT have more than (\d+) characters/, (n) => `must be at most ${n} characters long`],
  [/must NOT have fewer than (\d+) items/, (n) => `must have at least ${n} items`],
  [/must NOT have more than (\d+) items/, (n) => `must have at most ${n} items`],
  [/must be equal to one of the allowed values/, () => 'must be one of the listed choices'],
  [/must be integer/, () => 'must be a whole number'],
  [/must be number/, () => 'must be a number'],
  [/must be string/, () => 'must be text'],
  [/must be boolean/, () => 'must be true or false'],
  [/must NOT have additional properties/, () => 'has a field the schema does not know'],
];

/**
 * A validator's message in words; one it does not know is kept as it is. A pattern of a field with a
 * `format` (Zod writes `z.email()` as both) is said as the format.
 */
export function humanMessage(message: string, node?: JsonSchemaNode): string {
  if (/must match pattern/.test(message) && node?.format && FORMATS[node.format])
    return `must be ${FORMATS[node.format]}`;
  for (const [pattern, say] of MESSAGES) {
    const match = pattern.exec(message);
    if (match) return say(...match.slice(1));
  }
  return message;
}

/** A field's default as the form shows it beside the field's name. */
function defaultText(node: JsonSchemaNode): string | undefined {
  return node.default === undefined ? undefined : `default: ${JSON.stringify(node.default)}`;
}

/**
 * Form fields for an object schema, one per property, nested objects as
 * fieldsets; each field's server-side errors beside it. Inputs are named by
 * their path (`a.b`), and `readPayload` turns the form back into a payload.
 * The browser does not validate: the server's registered schema does.
 */
export function SchemaFields(props: { schema: JsonSchemaNode; errors: Map<string, string[]>; path?: string[] }) {
  const path = props.path ?? [];
  const required = new Set(props.schema.required ?? []);
  return (
    <>
      {Object.entries(props.schema.properties ?? {}).map(([key, node]) => {
        const fieldPath = [...path, key];
        const id = `field-${pathKey(fieldPath)}`;
        const errors = props.errors.get(pathKey(fieldPath)) ?? [];
        const kind = kindOf(node);
        if (kind === 'object' && node.properties) {
          return (
            <fieldset key={key}>
              <legend>{key}</legend>
              <SchemaFields schema={node} errors={props.errors} path={fieldPath} />
            </fieldset>
          );
        }
        return (
          <div class={`field${errors.length ? ' invalid' : ''}`} key={key}>
            <label for={id} class="field-label">
              {key}
              {required.has(key) && <span class="required"> *</span>}
              <span class="muted small"> {kind === 'json' ? 'JSON' : kind}</span>
              {defaultText(node) && <span class="muted small field-default"> · {defaultText(node)}</span>}
            </label>
            <FieldInput id={id} name={pathKey(fieldPath)} node={node} kind={kind} invalid={errors.length > 0} />
            {node.description && <p class="muted small">{node.description}</p>}
            {[...new Set(errors.map((message) => humanMessage(message, node)))].map((message) => (
              <p key={message} class="field-error" role="alert">
                {message}
              </p>
            ))}
          </div>
        );
      })}
      {(props.errors.get(pathKey(path)) ?? [])
        .filter((m) => !m.includes('required property'))
        .map((message) => (
          <p key={message} class="field-error" role="alert">
            {humanMessage(message)}
          </p>
        ))}
    </>
  );
}

function FieldInput(props: { id: string; name: string; node: JsonSchemaNode; kind: string; invalid: boolean }) {
  const { id, name, node, kind } = props;
  const common = { id, name, 'aria-invalid': props.invalid, 'data-kind': kind };
  const initial = node.default === undefined ? undefined : node.default;
  switch (kind) {
    case 'enum':
      return (
        <select {...common} data-values={JSON.stringify(node.enum)}>
          <option value="">—</option>
          {(node.enum ?? []).map((value) => (
            <option key={JSON.stringify(value)} value={JSON.stringify(value)} selected={value === initial}>
              {String(value)}
            </option>
          ))}
        </select>
      );
    case 'boolean':
      return <input {...common} type="checkbox" defaultChecked={initial === true} />;
    case 'integer':
    case 'number':
      return (
        <input
          {...common}
          type="text"
          inputMode="decimal"
          defaultValue={initial === undefined ? '' : String(initial)}
        />
      );
    case 'string':
      return <input {...common} type="text" defaultValue={typeof initial === 'string' ? initial : ''} />;
    default:
      return <textarea {...common} rows={3} defaultValue={initial === undefined ? '' : JSON.stringify(initial)} />;
  }
}

/**
 * The payload a form's fields describe. Empty fields are left out, so the
 * server reports a missing required one; a number field that is not a number
 * is sent as typed, for the server to reject. Throws `SyntaxError` naming the
 * field when a JSON field does not parse.
 */
export function readPayload(form: HTMLFormElement): Record<string, unknown> {
  const payload: Record<string, unknown> = {};
  for (const element of Array.from(form.querySelectorAll<HTMLInputElement>('[data-kind]'))) {
    const value = fieldValue(element);
    if (value === undefined) continue;
    const path = element.name.split('.');
    let target = payload;
    for (const key of path.slice(0, -1)) {
      target[key] ??= {};
      target = target[key] as Record<string, unknown>;
    }
    target[path.at(-1)!] = value;
  }
  return payload;
}

function fieldValue(element: HTMLInputElement): unknown {
  const kind = element.dataset.kind;
  if (kind === 'boolean') return element.checked;
  const text = element.value.trim();
  if (text === '') return undefined;
  if (kind === 'enum') return JSON.parse(text);
  if (kind === 'integer' || kind === 'number') return Number.isFinite(Number(text)) ? Number(text) : text;
  if (kind === 'string') return element.value;
  try {
    return JSON.parse(text);
  } catch {
    throw new SyntaxError(`${element.name} is not valid JSON`);
  }
}
