import { compileUserPattern, userPatternProblem } from './user-pattern';

describe('user patterns (RE2)', () => {
  it('searches like RegExp.prototype.test for the patterns users write', () => {
    const cases: [string, string, boolean][] = [
      ['^gpt-4o(-\\d{4}-\\d{2}-\\d{2})?$', 'gpt-4o-2024-08-06', true],
      ['^gpt-4o(-\\d{4}-\\d{2}-\\d{2})?$', 'gpt-4o-mini', false],
      ['claude', 'anthropic/claude-3', true],
      ['^[\\w.-]+@[\\w-]+\\.\\w+$', 'a.b@c.de', true],
      ['\\u00e9t\\u00e9', 'été', true],
      ['(?<year>\\d{4})-\\d{2}', 'on 2024-05', true],
      ['a/b', 'xa/by', true],
      ['[^]x', '\nx', true],
    ];
    for (const [p, s, want] of cases) {
      expect([p, s, compileUserPattern(p).test(s)]).toEqual([p, s, want]);
      expect(new RegExp(p).test(s)).toBe(want);
    }
  });

  it('runs catastrophic patterns in linear time', () => {
    const re = compileUserPattern('^(a+)+$');
    const t0 = performance.now();
    expect(re.test(`${'a'.repeat(100_000)}!`)).toBe(false);
    expect(re.test('a'.repeat(30))).toBe(true);
    expect(performance.now() - t0).toBeLessThan(2000); // V8's backtracking engine: 2^29 steps for 29 a's
  });

  it('refuses what RE2 cannot run with the same meaning, and invalid ECMAScript', () => {
    expect(userPatternProblem('^(a+)\\1$')).toMatch(/backreferences/);
    expect(userPatternProblem('(?<n>a)\\k<n>')).toMatch(/backreferences/);
    expect(userPatternProblem('(?=a)b')).toMatch(/RE2/);
    expect(userPatternProblem('(?<!a)b')).toMatch(/RE2/);
    expect(userPatternProblem('a{1001}')).toMatch(/RE2/);
    expect(userPatternProblem('(')).toMatch(/not a valid regular expression/);
    expect(userPatternProblem('(?i)abc')).toMatch(/not a valid regular expression/); // RE2 syntax, not ECMAScript
    expect(userPatternProblem('\\-', { unicode: true })).toMatch(/not a valid regular expression/);
    expect(userPatternProblem('gpt\\-4')).toBeNull();
    expect(userPatternProblem('\\\\1')).toBeNull(); // an escaped backslash, then 1
  });
});
