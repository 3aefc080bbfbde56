import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ToolNameStyle } from './types.js';
import { projectToolNames, sanitizeRemoteName, serverToolPrefix, validateServerName } from './names.js';
import { sha256Hex } from './sha256.js';

const DU = ToolNameStyle.double_underscore;
const PX = ToolNameStyle.prefixed;

describe('validateServerName', () => {
  it('accepts double_underscore server names (docs/names.md) and rejects the rest', () => {
    for (const ok of ['github', 'a', '0day', 'my-server_2', 'a'.repeat(32)])
      expect(validateServerName(ok, DU)).toBeNull();
    for (const bad of ['', 'GitHub', '-x', '_x', 'a b', 'a.b', 'a'.repeat(33), 'a__b', 'é']) {
      expect(validateServerName(bad, DU)).toEqual(expect.any(String));
    }
  });

  it('accepts prefixed slugs (docs/names.md) and rejects the rest', () => {
    for (const ok of ['acme', 'ab', 'a1_b', 'a'.repeat(31)]) expect(validateServerName(ok, PX)).toBeNull();
    for (const bad of ['a', '1ab', 'ac-me', 'Acme', 'a'.repeat(32), 'a__b', '_ab']) {
      expect(validateServerName(bad, PX)).toEqual(expect.any(String));
    }
  });

  it('names the problem in the message', () => {
    expect(validateServerName('a__b', DU)).toContain('__');
    expect(validateServerName('Bad', DU)).toContain('Bad');
  });
});

describe('sanitizeRemoteName', () => {
  it('replaces runs of other characters with one underscore and trims edge underscores', () => {
    expect(sanitizeRemoteName('create issue')).toBe('create_issue');
    expect(sanitizeRemoteName('a.b/c::d')).toBe('a_b_c_d');
    expect(sanitizeRemoteName('  héllo wörld  ')).toBe('h_llo_w_rld');
    expect(sanitizeRemoteName('__x__')).toBe('x');
    expect(sanitizeRemoteName('-x-')).toBe('-x-');
    expect(sanitizeRemoteName('😀')).toBe('tool');
    expect(sanitizeRemoteName('')).toBe('tool');
    expect(sanitizeRemoteName('Get-Item_2')).toBe('Get-Item_2');
  });

  it('always yields a non-empty name in the allowed alphabet', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const out = sanitizeRemoteName(s);
        expect(out).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(out.startsWith('_') || out.endsWith('_')).toBe(false);
      }),
    );
  });
});

describe('projectToolNames', () => {
  it('prefixes sanitized names in both styles', () => {
    expect([...projectToolNames('github', ['create_issue', 'list repos'], DU)]).toEqual([
      ['create_issue', 'github__create_issue'],
      ['list repos', 'github__list_repos'],
    ]);
    expect(projectToolNames('acme', ['create_ticket'], PX).get('create_ticket')).toBe('mcp_acme_create_ticket');
    expect(serverToolPrefix('acme', PX)).toBe('mcp_acme_');
    expect(serverToolPrefix('github', DU)).toBe('github__');
  });

  it('caps names at 64 characters', () => {
    const name = projectToolNames('github', ['x'.repeat(100)], DU).get('x'.repeat(100))!;
    expect(name).toBe(`github__${'x'.repeat(56)}`);
  });

  it('gives every colliding name a stable hash suffix and leaves the others alone', () => {
    const names = projectToolNames('s', ['a.b', 'a b', 'a_b', 'other'], DU);
    expect(names.get('other')).toBe('s__other');
    for (const remote of ['a.b', 'a b', 'a_b'])
      expect(names.get(remote)).toBe(`s__a_b_${sha256Hex(remote).slice(0, 6)}`);
  });

  it('suffixes names that collide only after truncation, within 64 characters', () => {
    const long = 'y'.repeat(70);
    const names = projectToolNames('github', [`${long}1`, `${long}2`], DU);
    const a = names.get(`${long}1`)!;
    const b = names.get(`${long}2`)!;
    expect(a).not.toBe(b);
    expect(a).toHaveLength(64);
    expect(a).toBe(`github__${'y'.repeat(49)}_${sha256Hex(`${long}1`).slice(0, 6)}`);
  });

  it("resolves a remote name that spells another tool's suffixed name", () => {
    const literal = `a_b_${sha256Hex('a.b').slice(0, 6)}`;
    const names = projectToolNames('s', ['a.b', 'a b', literal], DU);
    expect(new Set(names.values()).size).toBe(3);
  });

  it('keeps the first of duplicate remote names', () => {
    const names = projectToolNames('s', ['x', 'x', 'y'], DU);
    expect([...names]).toEqual([
      ['x', 's__x'],
      ['y', 's__y'],
    ]);
  });

  it('is injective, bounded, well-formed and independent of input order', () => {
    const remote = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.constantFrom('a', 'a!', 'a?', '!a', 'A', 'tool', ''),
      fc.string({ unit: fc.constantFrom('x', '.', '_', '-'), maxLength: 90 }),
    );
    fc.assert(
      fc.property(
        fc.constantFrom('s', 'github', 'x'.repeat(31), 'abc_d'),
        fc.constantFrom(DU, PX),
        fc.array(remote, { maxLength: 25 }),
        (server, style, remotes) => {
          const names = projectToolNames(server, remotes, style);
          expect(names.size).toBe(new Set(remotes).size);
          expect(new Set(names.values()).size).toBe(names.size);
          for (const name of names.values()) {
            expect(name.length).toBeLessThanOrEqual(64);
            expect(name.startsWith(serverToolPrefix(server, style))).toBe(true);
            expect(name).toMatch(/^[A-Za-z0-9_-]+$/);
          }
          const reversed = projectToolNames(server, [...remotes].reverse(), style);
          expect(new Map([...reversed].sort())).toEqual(new Map([...names].sort()));
        },
      ),
    );
  });

  it('leaves a name unsuffixed when nothing collides with it', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9_]{0,20}[a-z0-9]$/), { maxLength: 20 }), (remotes) => {
        const names = projectToolNames('srv', remotes, DU);
        for (const r of remotes) expect(names.get(r)).toBe(`srv__${r}`);
      }),
    );
  });
});
