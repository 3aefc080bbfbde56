import { describe, expect, it } from 'vitest';
import type { ToolsObserved } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import type { McpConnection } from '@mcpx/mcp-client';
import { QuietDiscovery } from './quiet-discovery.js';

/** A connection that lists what it is told to (quiet discovery reads nothing else of it). */
function connection(tools: () => Array<{ name: string }>): McpConnection {
  return { transport: 'streamable-http', listTools: () => Promise.resolve(tools()) } as unknown as McpConnection;
}

const silent = { warn: () => {} } as unknown as Logger;
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('quiet discovery', () => {
  it('reports a list once; the same list again goes out only when renewed or carrying a verdict', async () => {
    const sent: ToolsObserved[] = [];
    const quiet = new QuietDiscovery((m) => sent.push(m), silent);
    let tools = [{ name: 'echo' }];
    const conn = connection(() => tools);
    quiet.observe('acct', 'srv', conn);
    quiet.observe('acct', 'srv', conn);
    await settle();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      account: 'acct',
      server: 'srv',
      tools: [{ name: 'echo' }],
      transport: 'streamable-http',
    });

    tools = [{ name: 'echo' }, { name: 'add' }];
    quiet.observe('acct', 'srv', conn);
    await settle();
    expect(sent).toHaveLength(2);

    quiet.renew('acct', 'srv', conn);
    await settle();
    expect(sent).toHaveLength(3);

    quiet.observe('acct', 'srv', conn, { era: 'modern' } as never);
    await settle();
    expect(sent).toHaveLength(4);
    expect(sent[3]).toMatchObject({ era: 'modern' });
  });

  it('keeps servers apart, and a failed list is logged, never thrown', async () => {
    const sent: ToolsObserved[] = [];
    const warned: string[] = [];
    const quiet = new QuietDiscovery((m) => sent.push(m), {
      warn: (msg: string) => warned.push(msg),
    } as unknown as Logger);
    const conn = connection(() => [{ name: 'echo' }]);
    quiet.observe('acct', 'a', conn);
    quiet.observe('acct', 'b', conn);
    quiet.observe('other', 'a', conn);
    const broken = {
      transport: 'streamable-http',
      listTools: () => Promise.reject(new Error('gone')),
    } as unknown as McpConnection;
    quiet.observe('acct', 'c', broken);
    await settle();
    expect(sent.map((m) => `${m.account}/${m.server}`)).toEqual(['acct/a', 'acct/b', 'other/a']);
    expect(warned).toEqual(['quiet discovery list failed']);
  });
});
