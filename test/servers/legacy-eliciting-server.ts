import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { serveV1Sessions } from './v1-sessions.js';

/**
 * A legacy-era (2025-11-25) server on SDK v1 whose tools push `elicitation/create` to the client
 * in the middle of a call (the 2025 way of asking), over Streamable HTTP with sessions, on loopback:
 * - `deploy {env}` asks "Deploy to <env>?" `{confirm: boolean}` and deploys only when accepted;
 * - `provision {}` asks twice in one call: the name, then the region;
 * - `summarize {text}` pushes `sampling/createMessage` (the client's model writes the summary)
 *   and answers `summary: <the model's text>`, or the error the client answered with.
 * A client that did not declare elicitation (sampling, for `summarize`) is not asked: the tool
 * answers an error saying so.
 */
export interface LegacyElicitingServer {
  url: string;
  stats: { calls: number; elicitations: number; answers: unknown[]; samplings: number; sampled: unknown[] };
  close(): Promise<void>;
}

const text = (t: string, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: t }],
  ...(isError ? { isError: true } : {}),
});

export async function startLegacyElicitingServer(): Promise<LegacyElicitingServer> {
  const stats: LegacyElicitingServer['stats'] = { calls: 0, elicitations: 0, answers: [], samplings: 0, sampled: [] };

  const newServer = (): Server => {
    const server = new Server({ name: 'mcpx-legacy-eliciting', version: '0.1.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        {
          name: 'deploy',
          description: 'Deploy after the operator confirms',
          inputSchema: { type: 'object', properties: { env: { type: 'string' } }, required: ['env'] },
        },
        {
          name: 'provision',
          description: 'Provision a database (asks twice)',
          inputSchema: { type: 'object', properties: {} },
        },
        {
          name: 'summarize',
          description: "Summarize a text with the client's model",
          inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      stats.calls += 1;
      if (request.params.name === 'summarize') {
        if (server.getClientCapabilities()?.sampling === undefined)
          return text('this client cannot sample (no sampling capability)', true);
        stats.samplings += 1;
        const raw = request.params.arguments?.text;
        try {
          const reply = await server.createMessage(
            {
              messages: [
                { role: 'user', content: { type: 'text', text: `Summarize: ${typeof raw === 'string' ? raw : ''}` } },
              ],
              maxTokens: 100,
            },
            { relatedRequestId: extra.requestId, timeout: 120_000 },
          );
          stats.sampled.push(reply);
          const content = reply.content as { type?: string; text?: string };
          return text(`summary: ${content.type === 'text' ? String(content.text) : '(no text)'}`);
        } catch (err) {
          return text(`sampling refused: ${err instanceof Error ? err.message : String(err)}`, true);
        }
      }
      if (server.getClientCapabilities()?.elicitation === undefined)
        return text('this client cannot be asked (no elicitation capability)', true);
      const ask = async (message: string, requestedSchema: Record<string, unknown>) => {
        stats.elicitations += 1;
        const answer = await server.elicitInput({ mode: 'form', message, requestedSchema } as never, {
          relatedRequestId: extra.requestId,
          timeout: 120_000,
        });
        stats.answers.push(answer);
        return answer;
      };
      if (request.params.name === 'deploy') {
        const raw = request.params.arguments?.env;
        const env = typeof raw === 'string' ? raw : '';
        const a = await ask(`Deploy to ${env}?`, {
          type: 'object',
          properties: { confirm: { type: 'boolean', title: 'Confirm deployment' } },
          required: ['confirm'],
        });
        if (a.action !== 'accept' || a.content?.confirm !== true)
          return text(`Deployment to ${env} cancelled by the operator`, true);
        return text(`Deployed to ${env}`);
      }
      if (request.params.name === 'provision') {
        const name = await ask('Database name?', {
          type: 'object',
          properties: { name: { type: 'string' } },
          required: ['name'],
        });
        if (name.action !== 'accept') return text('cancelled', true);
        const region = await ask('Which region?', {
          type: 'object',
          properties: { region: { type: 'string', enum: ['eu-west-1', 'us-east-1'] } },
          required: ['region'],
        });
        if (region.action !== 'accept') return text('cancelled', true);
        return text(`Provisioned ${String(name.content?.name)} in ${String(region.content?.region)}`);
      }
      return text(`Unknown tool: ${request.params.name}`, true);
    });
    return server;
  };

  const served = await serveV1Sessions(newServer);
  return { url: served.url, stats, close: () => served.close() };
}
