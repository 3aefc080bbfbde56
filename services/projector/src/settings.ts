import { integerSetting } from '@mcpx/config';
import type { ProjectorOptions } from './projector.js';

/**
 * The projector's own settings beside the shared ones of `loadConfig` (read once, by its main.ts),
 * through the one integer parser of `@mcpx/config`:
 * - `PROJECTOR_ACK_WAIT_MS`: how soon an event a dead instance held is redelivered (default 30 s);
 * - `PROJECTOR_PUBLISH_WINDOW`: agent-tools-changed messages awaiting their PubAck at once
 *   (default 5,000).
 * Unset or empty: the projector's default. Anything else must be a positive integer, or the
 * projector refuses to start with a `ConfigError` naming the variable.
 */
export function loadProjectorSettings(env: NodeJS.ProcessEnv): Pick<ProjectorOptions, 'ackWaitMs' | 'publishWindow'> {
  const positive = (name: string): number | undefined =>
    integerSetting(env, name, { fallback: undefined, min: 1, message: `${name} must be a positive integer` });
  const ackWaitMs = positive('PROJECTOR_ACK_WAIT_MS');
  const publishWindow = positive('PROJECTOR_PUBLISH_WINDOW');
  return {
    ...(ackWaitMs !== undefined ? { ackWaitMs } : {}),
    ...(publishWindow !== undefined ? { publishWindow } : {}),
  };
}
