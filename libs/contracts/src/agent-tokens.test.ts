import { describe, expect, it } from 'vitest';
import { agentTokenHash, isAgentTokenShape } from './agent-tokens.js';

describe('agent tokens', () => {
  it('are stored as the hex SHA-256 of their UTF-8 bytes (FIPS 180-4 vectors: the hashes stored before stay valid)', () => {
    expect(agentTokenHash('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(agentTokenHash('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(agentTokenHash('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  it('have one shape', () => {
    expect(isAgentTokenShape(`mcpx_at_${'A'.repeat(43)}`)).toBe(true);
    expect(isAgentTokenShape(`mcpx_at_${'A'.repeat(42)}`)).toBe(false);
  });
});
