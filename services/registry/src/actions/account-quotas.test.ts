import { describe, expect, it } from 'vitest';
import { loadConfig } from '@mcpx/config';
import { QUOTA_DEFAULTS } from '@mcpx/locks';

describe('quota defaults', () => {
  it("a service wired without the configuration's quotas uses the configuration's defaults", () => {
    expect(QUOTA_DEFAULTS).toEqual(loadConfig('registry', { OUTBOUND_PROFILE: 'local' }).quotas);
  });
});
