import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startInputMcpServer, type InputMcpServer } from '../servers/input-mcp-server.js';
import { errorOf, startEndpointSystem, type EndpointSystem } from '../endpoint/endpoint-harness.js';
import { INPUT_TOOLS, pendingInputs } from './input-system.js';
import { withBearer } from '../support/fixtures/bearer.js';

const textOf = (result: { content?: unknown }): string =>
  (result.content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '';

/**
 * Input requests through the agent's own MCP endpoint (the re-exported door): a question for the
 * account owner (a form to a client that declared no elicitation) is a tool result naming the
 * input request, re-sent with it in `_meta` once answered; a form to a client that declared
 * elicitation, and sampling to one that declared sampling, go on to the endpoint's MCP client as
 * its own `input_required` (the client answers with its elicitation or sampling handler, and the
 * server's requestState never leaves the proxy).
 */
describe('input requests through the agent MCP endpoint', () => {
  let sys: EndpointSystem;
  let upstream: InputMcpServer;
  const clients: Client[] = [];

  const connect = async (agent: string, handlers: { elicit?: boolean; sample?: boolean } = {}): Promise<Client> => {
    const { token } = await sys.token(agent);
    const client = new Client(
      { name: 'inputs-endpoint', version: '1.0.0' },
      {
        versionNegotiation: { mode: 'auto' },
        capabilities: {
          ...(handlers.elicit ? { elicitation: { form: {} } } : {}),
          ...(handlers.sample ? { sampling: {} } : {}),
        },
      },
    );
    // The client's "user": answers each form by its fields.
    const byField: Record<string, string | boolean | string[]> = {
      confirm: true,
      name: 'from-client',
      region: 'eu-west-1',
      tags: [],
    };
    if (handlers.elicit) {
      client.setRequestHandler('elicitation/create', (req) => {
        const fields = Object.keys(
          (req.params as { requestedSchema?: { properties?: Record<string, unknown> } }).requestedSchema?.properties ??
            {},
        );
        return Promise.resolve({
          action: 'accept' as const,
          content: Object.fromEntries(fields.map((f) => [f, byField[f] ?? 'x'])),
        });
      });
    }
    if (handlers.sample)
      client.setRequestHandler('sampling/createMessage', () =>
        Promise.resolve({
          role: 'assistant' as const,
          content: { type: 'text' as const, text: 'short' },
          model: 'client-model',
        }),
      );
    await client.connect(new StreamableHTTPClientTransport(new URL(sys.urlOf(agent)), withBearer(token)));
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    [sys, upstream] = await Promise.all([startEndpointSystem(), startInputMcpServer()]);
    await sys.system.setServer('ops', upstream.url);
    await sys.system.createAgent('owner-asks', ['ops'], INPUT_TOOLS);
    const runtime = await sys.system.createAgent('client-answers', ['ops'], INPUT_TOOLS);
    await sys.system.api.act('UpdateAgent', {
      agent: runtime,
      definition: { mcpServers: ['ops'], inputs: { forms: 'runtime' } },
    });
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await sys?.stop();
    await upstream?.close();
  });

  it('a question for the owner (the client declared no elicitation) is a tool result naming it; answered, the call re-sent with _meta io.mcpx/inputRequestId finishes', async () => {
    const client = await connect('owner-asks');
    const stopped = await client.callTool({ name: 'ops__deploy', arguments: { env: 'prod' } });
    expect(stopped.isError).toBe(true);
    const err = errorOf(stopped);
    expect(err.code).toBe('input_required');
    const id = err.details.inputRequestId as string;
    expect(textOf(stopped)).toContain('Deploy to prod?');
    expect(textOf(stopped)).toContain(`"io.mcpx/inputRequestId": "${id}"`);
    expect((await pendingInputs(sys.system)).map((r) => r.id)).toContain(id);
    await sys.system.api.act('AnswerInputRequest', { id, action: 'accept', content: { confirm: true } });
    const done = await client.callTool({
      name: 'ops__deploy',
      arguments: { env: 'prod' },
      _meta: { 'io.mcpx/inputRequestId': id },
    });
    expect(done.isError).toBeFalsy();
    expect(textOf(done)).toBe('Deployed to prod');
  });

  it("a URL question goes to the person only: the endpoint's client (a model's host) is told an input request waits, never the URL", async () => {
    // A client that declared no way to answer: the server is told the connector's (a person opens URLs).
    const client = await connect('client-answers');
    const stopped = await client.callTool({ name: 'ops__sign_in', arguments: {} });
    expect(stopped.isError).toBe(true);
    const err = errorOf(stopped);
    expect(err).toMatchObject({ code: 'input_required', details: { forPerson: true } });
    expect(JSON.stringify(stopped)).not.toContain('auth.example.com');
    // The person sees it where the account's owner answers.
    const listed = (await pendingInputs(sys.system)).find((r) => r.id === err.details.inputRequestId);
    expect(listed?.requests[0]).toMatchObject({ kind: 'url', url: 'https://auth.example.com/login?flow=mcpx' });
    await sys.system.api.act('AnswerInputRequest', { id: listed!.id, action: 'cancel' });
  });

  it('forms and sampling go on to the endpoint client that declared them, which answers them itself', async () => {
    const client = await connect('client-answers', { elicit: true, sample: true });
    const deployed = await client.callTool({ name: 'ops__deploy', arguments: { env: 'eu' } });
    expect(textOf(deployed)).toBe('Deployed to eu');
    const provisioned = await client.callTool({ name: 'ops__provision', arguments: {} });
    expect(provisioned.isError, textOf(provisioned)).toBeFalsy();
    expect(textOf(provisioned)).toBe('Provisioned from-client in eu-west-1');
    const summary = await client.callTool({ name: 'ops__summarize', arguments: { text: 'a diff' } });
    expect(textOf(summary)).toBe('summary: short');
    expect(await pendingInputs(sys.system)).toEqual([]);

    // A 2026-07-28 client that declared forms but no sampling is declared so to the server, which may
    // not ask it to sample: the server's own refusal reaches the client as the revision says, -32021.
    const mute = await connect('client-answers', { elicit: true });
    await expect(mute.callTool({ name: 'ops__summarize', arguments: { text: 'a diff' } })).rejects.toMatchObject({
      code: -32021,
    });
    expect(await pendingInputs(sys.system)).toEqual([]);
  });
});
