import { describe, expect, it } from 'vitest';
import { loadProjectorSettings } from './settings.js';

/** The refusal of a setting: its `code` and the variable it names (never the value). */
function refusal(env: NodeJS.ProcessEnv): { code?: string; setting?: string; message: string } {
  try {
    loadProjectorSettings(env);
  } catch (err) {
    return err as { code?: string; setting?: string; message: string };
  }
  throw new Error('the settings were taken');
}

describe("the projector's settings (the one integer parser of @mcpx/config)", () => {
  it('leaves the defaults to the projector when unset or empty, and takes positive integers', () => {
    expect(loadProjectorSettings({})).toEqual({});
    expect(loadProjectorSettings({ PROJECTOR_ACK_WAIT_MS: '', PROJECTOR_PUBLISH_WINDOW: '' })).toEqual({});
    expect(loadProjectorSettings({ PROJECTOR_ACK_WAIT_MS: '5000', PROJECTOR_PUBLISH_WINDOW: '100' })).toEqual({
      ackWaitMs: 5_000,
      publishWindow: 100,
    });
  });

  it('refuses what is not a positive integer, with invalid_config naming the variable', () => {
    for (const name of ['PROJECTOR_ACK_WAIT_MS', 'PROJECTOR_PUBLISH_WINDOW']) {
      for (const value of ['0', '-5', '2.5', '30s', 'NaN', '1e400']) {
        const err = refusal({ [name]: value });
        expect(err, `${name}=${value}`).toMatchObject({
          code: 'invalid_config',
          setting: name,
          message: `${name} must be a positive integer`,
        });
      }
    }
  });
});
