import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import {
  acceptedContent,
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  McpServer,
  type CallToolResult,
  type InputRequiredResult,
} from '@modelcontextprotocol/server';
import * as z from 'zod/v4';
import { listenOnLoopback } from './loopback.js';

/**
 * A real SDK v2 server whose tools ask for input mid-call (2026-07-28 `input_required`), on
 * loopback. `modern` serves 2026-07-28 only (`legacy: 'reject'`); `dual` serves both eras
 * (`legacy: 'stateless'`: to a 2025 client the SDK's legacy shim pushes the same questions as
 * `elicitation/create`). Tools:
 * - `deploy {env}` — a form: "Deploy to <env>?" `{confirm: boolean}`; declined or cancelled it
 *   answers an error "Deployment to <env> cancelled by the operator".
 * - `sign_in {}` — a URL elicitation; accepted it answers "Signed in".
 * - `provision {}` — three rounds in sequence, carried in a signed `requestState` (HMAC, the SDK's
 *   codec): the name, then the region and tags (two questions in one round), then "Provisioned …".
 * - `profile {}` — one form of every restricted kind (email, bounded integer, boolean, single- and
 *   multi-select); answers the content it got as JSON.
 * - `summarize {text}` — a sampling request; answers the model's text.
 * - `list_roots {}` — a roots request (refused by the connector).
 */
export interface InputMcpServer {
  url: string;
  port: number;
  stats: {
    calls: number;
    /** The `requestState` each call carried (undefined for a first round). */
    statesSeen: Array<string | undefined>;
    /** The `inputResponses` each call carried. */
    responsesSeen: Array<Record<string, unknown> | undefined>;
  };
  /** Mints a `requestState` the way the server does (to prove a forged one is refused). */
  close(): Promise<void>;
}

const CONFIRM = z.object({ confirm: z.boolean().meta({ title: 'Confirm deployment' }) });
const NAME = {
  type: 'object' as const,
  properties: { name: { type: 'string' as const, title: 'Database name', minLength: 1, maxLength: 40 } },
  required: ['name'],
};
const REGION = {
  type: 'object' as const,
  properties: { region: { type: 'string' as const, title: 'Region', enum: ['eu-west-1', 'us-east-1'] } },
  required: ['region'],
};
const TAGS = {
  type: 'object' as const,
  properties: {
    tags: {
      type: 'array' as const,
      title: 'Tags',
      items: { type: 'string' as const, enum: ['prod', 'pii', 'batch'] },
      maxItems: 3,
    },
  },
};
export const PROFILE_SCHEMA = {
  type: 'object' as const,
  properties: {
    email: { type: 'string' as const, title: 'Email', format: 'email' as const },
    seats: { type: 'integer' as const, title: 'Seats', minimum: 1, maximum: 10 },
    admin: { type: 'boolean' as const, title: 'Administrator' },
    plan: {
      type: 'string' as const,
      title: 'Plan',
      oneOf: [
        { const: 'free', title: 'Free' },
        { const: 'team', title: 'Team' },
      ],
    },
    features: {
      type: 'array' as const,
      title: 'Features',
      items: {
        anyOf: [
          { const: 'sso', title: 'Single sign-on' },
          { const: 'audit', title: 'Audit log' },
        ],
      },
    },
  },
  required: ['email', 'seats', 'plan'],
};

type ProvisionState = { step: 'named'; name: string };

export async function startInputMcpServer(
  opts: { era?: 'modern' | 'dual'; port?: number } = {},
): Promise<InputMcpServer> {
  const stats: InputMcpServer['stats'] = { calls: 0, statesSeen: [], responsesSeen: [] };
  const codec = createRequestStateCodec<ProvisionState>({
    key: crypto.getRandomValues(new Uint8Array(32)),
    ttlSeconds: 600,
  });
  const text = (t: string, isError = false): CallToolResult => ({
    content: [{ type: 'text', text: t }],
    ...(isError ? { isError: true } : {}),
  });

  const factory = (): McpServer => {
    const server = new McpServer(
      { name: 'mcpx-input-server', version: '0.1.0' },
      { capabilities: { tools: {} }, requestState: { verify: (state, ctx) => codec.verify(state, ctx) } },
    );
    const seen = (
      ctx: { mcpReq: { inputResponses?: Record<string, unknown>; envelope?: unknown } },
      state: string | undefined,
    ): void => {
      stats.calls += 1;
      stats.statesSeen.push(state);
      stats.responsesSeen.push(ctx.mcpReq.inputResponses);
    };
    const rawState = (ctx: unknown): string | undefined => {
      const raw = (ctx as { mcpReq: { requestState?: unknown } }).mcpReq.requestState;
      // The accessor is a function on 2026-07-28 requests; the raw string is kept in the stats only when one came.
      if (typeof raw === 'function') {
        const v = (raw as () => unknown)();
        return v === undefined ? undefined : JSON.stringify(v);
      }
      return typeof raw === 'string' ? raw : undefined;
    };

    server.registerTool(
      'deploy',
      { description: 'Deploy after the operator confirms', inputSchema: z.object({ env: z.string() }) },
      async ({ env }, ctx): Promise<CallToolResult | InputRequiredResult> => {
        seen(ctx, rawState(ctx));
        const view = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
        if (view.kind === 'elicit' && view.action !== 'accept')
          return text(`Deployment to ${env} cancelled by the operator`, true);
        const confirmed = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', CONFIRM);
        if (confirmed?.confirm !== true) {
          return inputRequired({
            inputRequests: {
              confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: CONFIRM }),
            },
          });
        }
        return Promise.resolve(text(`Deployed to ${env}`));
      },
    );

    server.registerTool(
      'sign_in',
      { description: 'Sign in through the browser', inputSchema: z.object({}) },
      (_args, ctx): CallToolResult | InputRequiredResult => {
        seen(ctx, rawState(ctx));
        const view = inputResponse(ctx.mcpReq.inputResponses, 'login');
        if (view.kind === 'elicit')
          return view.action === 'accept' ? text('Signed in') : text('Sign-in abandoned', true);
        return inputRequired({
          inputRequests: {
            login: inputRequired.elicitUrl({
              message: 'Sign in to Example to continue',
              url: 'https://auth.example.com/login?flow=mcpx',
            }),
          },
        });
      },
    );

    server.registerTool(
      'provision',
      { description: 'Provision a database in three rounds', inputSchema: z.object({}) },
      async (_args, ctx): Promise<CallToolResult | InputRequiredResult> => {
        const state = ctx.mcpReq.requestState<ProvisionState>();
        seen(ctx, state === undefined ? undefined : JSON.stringify(state));
        if (state?.step !== 'named') {
          const named = acceptedContent<{ name: string }>(ctx.mcpReq.inputResponses, 'name');
          if (named === undefined)
            return inputRequired({
              inputRequests: { name: inputRequired.elicit({ message: 'Database name?', requestedSchema: NAME }) },
            });
          return inputRequired({
            inputRequests: {
              region: inputRequired.elicit({ message: 'Which region?', requestedSchema: REGION }),
              tags: inputRequired.elicit({ message: 'Any tags?', requestedSchema: TAGS }),
            },
            requestState: await codec.mint({ step: 'named', name: named.name }),
          });
        }
        const region = acceptedContent<{ region: string }>(ctx.mcpReq.inputResponses, 'region');
        const tags = acceptedContent<{ tags?: string[] }>(ctx.mcpReq.inputResponses, 'tags');
        if (region === undefined) return text('no region given', true);
        return text(
          `Provisioned ${state.name} in ${region.region}${tags?.tags?.length ? ` tagged ${tags.tags.join(',')}` : ''}`,
        );
      },
    );

    server.registerTool(
      'profile',
      { description: 'Fill in a profile', inputSchema: z.object({}) },
      (_args, ctx): CallToolResult | InputRequiredResult => {
        seen(ctx, rawState(ctx));
        const view = inputResponse(ctx.mcpReq.inputResponses, 'profile');
        if (view.kind === 'elicit')
          return view.action === 'accept'
            ? text(`profile ${JSON.stringify(view.content)}`)
            : text(`profile ${view.action}`, true);
        return inputRequired({
          inputRequests: {
            profile: inputRequired.elicit({ message: 'Your profile', requestedSchema: PROFILE_SCHEMA }),
          },
        });
      },
    );

    server.registerTool(
      'summarize',
      { description: 'Summarize a text with the client model', inputSchema: z.object({ text: z.string() }) },
      ({ text: input }, ctx): CallToolResult | InputRequiredResult => {
        seen(ctx, rawState(ctx));
        const view = inputResponse(ctx.mcpReq.inputResponses, 'summary');
        if (view.kind === 'sampling') {
          const content = view.result.content as { type?: string; text?: string };
          return text(`summary: ${content.type === 'text' ? (content.text ?? '') : '?'}`);
        }
        return inputRequired({
          inputRequests: {
            summary: inputRequired.createMessage({
              messages: [{ role: 'user', content: { type: 'text', text: `Summarize: ${input}` } }],
              maxTokens: 100,
            }),
          },
        });
      },
    );

    server.registerTool(
      'list_roots',
      { description: 'Asks for the client roots', inputSchema: z.object({}) },
      (_args, ctx): CallToolResult | InputRequiredResult => {
        seen(ctx, rawState(ctx));
        if (ctx.mcpReq.inputResponses?.roots !== undefined) return text('got roots');
        return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
      },
    );
    return server;
  };

  const handler = createMcpHandler(factory, { legacy: opts.era === 'dual' ? 'stateless' : 'reject' });
  const handle = toNodeHandler(handler);
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    void Promise.resolve(handle(req, res)).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  const listening = await listenOnLoopback(http, opts.port === undefined ? {} : { port: opts.port });
  return {
    url: `http://127.0.0.1:${listening.port}/mcp`,
    port: listening.port,
    stats,
    close: async () => {
      await handler.close().catch(() => {});
      await listening.close();
    },
  };
}
