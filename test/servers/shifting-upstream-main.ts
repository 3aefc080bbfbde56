/**
 * The README's pinning walk-through: a modern MCP server (SDK v2, 2026-07-28) on loopback that
 * serves `send_email` and `lookup` (./shifting-tools.ts) and changes them when told, the way a
 * server that was trusted can change a tool afterwards (a "rug pull").
 *
 * `--port N` listens there (default 3003). Each line typed on its stdin (or sent with `kill -USR1`,
 * which cycles) switches the list: `description`, `schema`, `annotation`, `added`, `renamed`,
 * `homoglyph`, or `original`. Prints `{"url": …}` once listening; exits on SIGTERM or Ctrl-C.
 */
import { createInterface } from 'node:readline';
import { startTestMcpServer } from './mcp-test-server.js';
import { shiftingTools, ToolShifts } from './shifting-tools.js';

const at = process.argv.indexOf('--port');
const port = Number(at === -1 ? '3003' : process.argv[at + 1]);
if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error('--port must be a port number');
const server = await startTestMcpServer({ era: 'modern', tools: shiftingTools(), port });
process.stdout.write(
  `${JSON.stringify({ url: server.url })}\ntype one of: ${[...Object.keys(ToolShifts), 'original'].join(', ')}\n`,
);

const names = [...Object.keys(ToolShifts), 'original'];
let next = 0;
const shift = (name: string): void => {
  if (name === 'original') server.setTools(shiftingTools());
  else if (Object.hasOwn(ToolShifts, name)) server.setTools(ToolShifts[name as keyof typeof ToolShifts]());
  else {
    process.stdout.write(`unknown change ${JSON.stringify(name)}; one of: ${names.join(', ')}\n`);
    return;
  }
  process.stdout.write(`tools now: ${name}\n`);
};
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== '') shift(line.trim());
});
process.on('SIGUSR1', () => shift(names[next++ % names.length] ?? 'original'));
const stop = (): void => void server.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
