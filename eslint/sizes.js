// Sizes a person can hold: no source file over 400 lines, no function over 80 (blank lines and
// comments count, as a reader sees them). The files below were over when the rule came in; each
// keeps its size of that day as a ceiling that may only come down. When a file shrinks, lower its
// ceiling; when it is under the floor, remove its line. Never raise one: split the file instead.
export const MAX_FILE_LINES = 400;
export const MAX_FUNCTION_LINES = 80;

/** @type {Record<string, { lines?: number, function?: number }>} */
export const CEILINGS = {
  'libs/config/src/nats-permissions.ts': { function: 152 },
  'services/endpoint/src/agent-server.ts': { lines: 431, function: 87 },
  'services/endpoint/src/endpoint.ts': { function: 126 },
  'services/endpoint/src/http.ts': { lines: 470 },
  'services/endpoint/src/lean-calls.ts': { lines: 503 },
  'services/endpoint/src/relayed.ts': { function: 230 },
  'services/endpoint/src/tool-calls.ts': { lines: 473, function: 222 },
  'services/proxy/src/call-service.ts': { function: 88 },
  'services/proxy/src/connection-pool.ts': { lines: 455, function: 90 },
  'services/proxy/src/input-requests.ts': { lines: 518, function: 104 },
  'services/proxy/src/proxy.ts': { function: 220 },
  'services/proxy/src/tasks/task-broker.ts': { lines: 514 },
  'services/authorization-server/src/authorize.ts': { function: 115 },
  'services/authorization-server/src/index.ts': { function: 144 },
  'services/registry/src/registry.ts': { function: 148 },
  'services/registry/src/review/inputs.actions.ts': { function: 89 },
  'services/registry/src/review/review.actions.ts': { function: 102 },
  'services/registry/src/servers/mcp-servers.actions.ts': { function: 137 },
};

/** ESLint config blocks: the floor for every source file, then each ceiling for its own file. */
export function sizeRules(files) {
  return [
    {
      files,
      ignores: ['**/*.test.ts', '**/test/**'],
      rules: {
        'max-lines': ['error', { max: MAX_FILE_LINES }],
        'max-lines-per-function': ['error', { max: MAX_FUNCTION_LINES }],
      },
    },
    ...Object.entries(CEILINGS).map(([file, ceiling]) => ({
      files: [file],
      rules: {
        'max-lines': ['error', { max: Math.max(MAX_FILE_LINES, ceiling.lines ?? 0) }],
        'max-lines-per-function': ['error', { max: Math.max(MAX_FUNCTION_LINES, ceiling.function ?? 0) }],
      },
    })),
  ];
}
