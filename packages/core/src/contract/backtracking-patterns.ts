/**
 * The first construct of a regular expression (ECMAScript syntax, as JSON
 * Schema's `pattern`) that needs a backtracking engine, named for a person
 * (`a backreference (\1)`, `a lookahead ((?=…))`), or `undefined`. The queue
 * server runs registered patterns on a linear-time engine, which has none of
 * these, and refuses patterns that use them.
 */
export function backtrackingConstructOf(pattern: string): string | undefined {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && next === 'k') return 'a named backreference (\\k<…>)';
      if (!inClass && next >= '1' && next <= '9') return `a backreference (\\${next})`;
      i++;
    } else if (inClass) {
      if (char === ']') inClass = false;
    } else if (char === '[') {
      inClass = true;
    } else if (char === '(' && pattern[i + 1] === '?') {
      const kind = pattern.slice(i + 2, i + 4);
      if (kind.startsWith('=')) return 'a lookahead ((?=…))';
      if (kind.startsWith('!')) return 'a negative lookahead ((?!…))';
      if (kind === '<=') return 'a lookbehind ((?<=…))';
      if (kind === '<!') return 'a negative lookbehind ((?<!…))';
    }
  }
  return undefined;
}
