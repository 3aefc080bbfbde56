import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { decodePayload, invalidInput, toWireError, type ServerDeletedEvent, type ServerDiscoveredEvent, type Subjects } from '@mcpx/contracts';
import type { Caller } from './actions/index.js';

const HEARTBEAT_MS = 15_000;

/**
 * `GET /v1/events?envelope=<base64url JSON of a signed {type: 'SubscribeEvents'} envelope>`:
 * Server-Sent Events of the signer's account — `agent-tools-changed` and `mcp-servers-changed`.
 * (EventSource cannot sign a request body, so the envelope travels in the query.)
 */
export class EventStream {
  private open = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
  ) {}

  get connections(): number {
    return this.open;
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL, auth: (body: unknown) => Promise<Caller>): Promise<void> {
    let caller: Caller;
    try {
      const raw = url.searchParams.get('envelope');
      if (raw === null) throw invalidInput('envelope', 'query parameter is required');
      let body: { action?: { type?: unknown } };
      try {
        body = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
      } catch {
        throw invalidInput('envelope', 'must be base64url JSON');
      }
      if (body?.action?.type !== 'SubscribeEvents') throw invalidInput('action.type', 'must be SubscribeEvents');
      caller = await auth(body);
    } catch (err) {
      const wire = toWireError(err);
      res.writeHead(wire.httpStatus, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: wire.toJSON() }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.write(': connected\n\n');
    this.open++;
    const write = (event: string, data: unknown): void => {
      res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    const subs: Subscription[] = [
      this.nc.subscribe(this.subjects.agentToolsChangedAll(caller.account), {
        callback: (err, msg) => {
          if (!err) write('agent-tools-changed', decodePayload(msg.data));
        },
      }),
      this.nc.subscribe(`${this.subjects.prefix}mcp.events.server.*.${caller.account}.*`, {
        callback: (err, msg) => {
          if (err) return;
          const kind = msg.subject.split('.').at(-3);
          const e = decodePayload<ServerDiscoveredEvent & ServerDeletedEvent>(msg.data);
          write('mcp-servers-changed', {
            kind,
            server: e.server,
            ...(e.status ? { status: e.status, toolCount: e.tools?.length ?? 0, toolsChanged: e.toolsChanged } : {}),
          });
        },
      }),
    ];
    const beat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
    req.on('close', () => {
      clearInterval(beat);
      for (const s of subs) s.unsubscribe();
      this.open--;
    });
  }
}
