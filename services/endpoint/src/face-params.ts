import { isLogLevel } from '@mcpx/contracts';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';

// The params of a face's requests that its handlers check themselves (agent-server.ts).

/**
 * `logging/setLevel`'s params, checked here so that a level that is not MCP's is the client's
 * `-32602` naming `level` (the SDK's own check of a spec method answers `-32603`).
 */
export const SET_LEVEL_PARAMS = {
  params: {
    '~standard': {
      version: 1 as const,
      vendor: 'mcpx',
      validate: (v: unknown) => {
        const level = (v as { level?: unknown } | null)?.level;
        return isLogLevel(level)
          ? { value: { level } }
          : {
              issues: [
                {
                  message:
                    'level: must be an MCP log level (debug, info, notice, warning, error, critical, alert, emergency)',
                  path: ['level'],
                },
              ],
            };
      },
    },
  },
};
/** Whether `v` is `{<key>: {…}}`: the only shape of a retry's `inputResponses`. */
export function isAnswerMap(v: unknown): boolean {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  return Object.values(v).every((a) => a !== null && typeof a === 'object' && !Array.isArray(a));
}

/** A `tools/list` cursor: the last name of the previous page (stable while the set changes). */
export function encodeCursor(name: string): string {
  return Buffer.from(name, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): string {
  const name = /^[A-Za-z0-9_-]{1,400}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (name === '' || encodeCursor(name) !== cursor)
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor');
  return name;
}
