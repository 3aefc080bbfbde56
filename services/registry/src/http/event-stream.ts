import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { listen, payload, subjectOnly } from '@mcpx/bus';
import {
  decodeAgentToolsChangedEvent,
  decodeApprovalDecidedEvent,
  decodeApprovalRequestedEvent,
  decodeInputAnsweredEvent,
  decodeInputRequestedEvent,
  invalidInput,
  toWireError,
  type WireError,
  type ApprovalDecidedEvent,
  type ApprovalRequestedEvent,
  type CallbackLog,
  type Subjects,
} from '@mcpx/contracts';
import { createLogger } from '@mcpx/log';
import type { Caller } from '../actions/index.js';
import { reviewEventData } from '../review/review-events.js';

const HEARTBEAT_MS = 15_000;

/** SSE event names of approvals (an `always_ask` call stopped; an owner decided it). */
const ApprovalEventNames = { requested: 'approval-requested', decided: 'approval-decided' } as const;

/** SSE event names of input requests (a server asked a question mid-call; a person answered it). */
const InputEventNames = { requested: 'input-requested', answered: 'input-answered' } as const;

/** What an input event shows a subscriber: which call and request, never a question's content nor an answer. */
function inputEventData(
  kind: string | undefined,
  bytes: Uint8Array,
): { event: string; data: Record<string, string | boolean> } | null {
  if (kind === 'requested') {
    const e = decodeInputRequestedEvent(bytes);
    return {
      event: InputEventNames.requested,
      data: {
        ...strings({
          inputRequestId: e.inputRequestId,
          agent: e.agent,
          run: e.run,
          tool: e.tool,
          server: e.server,
          expiresAt: e.expiresAt,
        }),
        forPerson: e.forPerson,
      },
    };
  }
  if (kind === 'answered') {
    const e = decodeInputAnsweredEvent(bytes);
    return {
      event: InputEventNames.answered,
      data: strings({
        inputRequestId: e.inputRequestId,
        agent: e.agent,
        run: e.run,
        tool: e.tool,
        server: e.server,
        answeredAt: e.answeredAt,
        expiresAt: e.expiresAt,
      }),
    };
  }
  return null;
}

/**
 * What an approval event shows a subscriber: which call, never its arguments (nor their hash,
 * which would confirm a guess of small arguments).
 */
function approvalEventData(
  kind: string,
  e: Partial<ApprovalRequestedEvent & ApprovalDecidedEvent>,
): { event: string; data: Record<string, string> } | null {
  const common = {
    approvalId: e.approvalId,
    agent: e.agent,
    run: e.run,
    tool: e.tool,
    server: e.server,
    expiresAt: e.expiresAt,
  };
  if (kind === 'requested') return { event: ApprovalEventNames.requested, data: strings(common) };
  if (kind === 'decided')
    return {
      event: ApprovalEventNames.decided,
      data: strings({ ...common, decision: e.decision, decidedAt: e.decidedAt }),
    };
  return null;
}

/** An approval notification of `kind` (from its subject), decoded strictly, as a subscriber sees it. */
function approvalEventOf(
  kind: string | undefined,
  bytes: Uint8Array,
): { event: string; data: Record<string, string> } | null {
  if (kind === 'requested') return approvalEventData(kind, decodeApprovalRequestedEvent(bytes));
  if (kind === 'decided') return approvalEventData(kind, decodeApprovalDecidedEvent(bytes));
  return null;
}

function strings(fields: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(fields).filter((f): f is [string, string] => typeof f[1] === 'string'));
}

/** What the HTTP server checks around a stream: its limits, and which agents an AGENT signer may see. */
export interface StreamGuards {
  /** Throws `rate_limited` when the client's address is over its rate (before anything else). */
  admitAddress: () => Promise<void>;
  /**
   * Takes one of the process's stream slots and one of the client address's, before the envelope
   * is read (throws `rate_limited` naming the limit); returns their release.
   */
  admitPeer: () => Promise<() => void>;
  /** Takes one of the account's stream slots (throws `quota_exceeded`); returns its release. */
  admitStream: (account: string) => Promise<() => void>;
  /** The agents an AGENT signer is bound to. */
  boundAgents: (account: string, signer: string) => Promise<string[]>;
  /** Extra headers of a refusal (`Retry-After`). */
  retryAfter: (err: WireError) => Record<string, string>;
  /**
   * Whether the signer still holds the role it opened the stream with (checked at each
   * heartbeat): a revoked signer's stream ends, a re-bound AGENT signer's follows its new agents.
   */
  stillHeld: (caller: Caller) => Promise<boolean>;
}

const NO_GUARDS: StreamGuards = {
  admitAddress: () => Promise.resolve(),
  admitPeer: () => Promise.resolve(() => {}),
  admitStream: () => Promise.resolve(() => {}),
  boundAgents: () => Promise.resolve([]),
  retryAfter: () => ({}),
  stillHeld: () => Promise.resolve(true),
};

/**
 * `GET /v1/events?envelope=<base64url JSON of a signed {type: 'SubscribeEvents'} envelope>`:
 * Server-Sent Events of the signer's account — `agent-tools-changed`, `mcp-servers-changed`,
 * `approval-requested`, `approval-decided`, `input-requested` and `input-answered`.
 * (EventSource cannot sign a request body, so the envelope travels in the query.)
 *
 * `mcp-servers-changed` says only `{kind, server}`: the bus event's status and tools are not
 * passed on (the console re-reads the server through the API). An AGENT signer's stream gets the
 * `agent-tools-changed` events of the agents it is bound to and nothing else. Each open stream
 * holds one of the account's stream slots and one of its client address's (both across
 * instances) and one of the process's, until it closes; the address's and the process's are
 * taken before the envelope is read.
 */
export class EventStream {
  private open = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
    /** Where a dropped malformed notification is logged (default: a registry logger of its own). */
    private readonly log: CallbackLog = createLogger('registry', { fields: { part: 'event-stream' } }),
  ) {}

  get connections(): number {
    return this.open;
  }

  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    auth: (body: unknown) => Promise<Caller>,
    guards: StreamGuards = NO_GUARDS,
  ): Promise<void> {
    let caller: Caller;
    let release: () => void;
    let agents: Set<string> | null = null;
    let releasePeer = (): void => {};
    try {
      await guards.admitAddress();
      releasePeer = await guards.admitPeer();
      caller = await auth(subscribeEnvelope(url));
      if (caller.role === 'AGENT') agents = new Set(await guards.boundAgents(caller.account, caller.signer));
      const releaseAccount = await guards.admitStream(caller.account);
      const peer = releasePeer;
      release = () => {
        releaseAccount();
        peer();
      };
    } catch (err) {
      releasePeer();
      const wire = toWireError(err);
      res.writeHead(wire.httpStatus, { 'content-type': 'application/json', ...guards.retryAfter(wire) });
      res.end(JSON.stringify({ error: wire.toJSON() }));
      return;
    }
    if (req.destroyed) {
      // The client left while the stream was being admitted: its slot goes back at once.
      release();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    this.open++;
    const write = (event: string, data: unknown): void => {
      res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    };
    // Every subscription is guarded (a throw would close the registry's NATS connection) and decodes
    // strictly: a malformed notification is logged without its bytes and dropped, the stream goes on.
    const subs: Subscription[] = [
      this.listen(
        this.subjects.agentToolsChangedAll(caller.account),
        payload(decodeAgentToolsChangedEvent),
        'agent-tools-changed event',
        (e) => {
          if (agents === null || agents.has(e.agent)) write('agent-tools-changed', e);
        },
      ),
    ];
    if (agents === null) subs.push(...this.ownerSubscriptions(caller.account, write));
    const signer = caller;
    const beat = setInterval(() => {
      res.write(': keep-alive\n\n');
      void this.revalidate(signer, guards, res, (bound) => (agents = bound));
    }, HEARTBEAT_MS);
    let closed = false;
    // The client leaving and the server ending the stream (a revoked signer) both end up here, once.
    const cleanup = (): void => {
      if (closed) return;
      closed = true;
      clearInterval(beat);
      for (const s of subs) s.unsubscribe();
      this.open--;
      release();
    };
    req.on('close', cleanup);
    res.on('close', cleanup);
    // `connected` is said once NATS has the subscriptions: nothing published after it is missed.
    await this.nc.flush().catch(() => undefined);
    res.write(': connected\n\n');
  }

  /** Ends the stream of a signer that lost its role; refreshes an AGENT signer's agents. A failed check keeps the stream (the next one decides). */
  private async revalidate(
    caller: Caller,
    guards: StreamGuards,
    res: ServerResponse,
    setAgents: (bound: Set<string>) => void,
  ): Promise<void> {
    try {
      if (!(await guards.stillHeld(caller))) {
        res.end();
        return;
      }
      if (caller.role === 'AGENT') setAgents(new Set(await guards.boundAgents(caller.account, caller.signer)));
    } catch (err) {
      this.log.warn('event stream signer check failed', { err: err as Error });
    }
  }

  /** Server and approval events: for the account's OWNER and WRITER signers, never an AGENT's. */
  private ownerSubscriptions(account: string, write: (event: string, data: unknown) => void): Subscription[] {
    const s = this.subjects;
    return [
      // The subject says which server and what happened; the payload (status, tools) is not
      // passed on, so nothing forged on the bus reaches a console as a fact.
      this.listen(s.serverEventsOf(account), subjectOnly(s.parseServerEvent), 'server event', (e) => {
        if (e !== null) write('mcp-servers-changed', { kind: e.kind, server: e.server });
      }),
      // A malformed notification is dropped: ListApprovals is the source of truth.
      this.listen(
        s.approvalEvents(account),
        (msg) => approvalEventOf(s.parseApprovalEvent(msg.subject)?.kind, msg.data),
        'approval event',
        (out) => {
          if (out) write(out.event, out.data);
        },
      ),
      // A malformed notification is dropped: ListInputRequests is the source of truth.
      this.listen(
        s.inputEvents(account),
        (msg) => inputEventData(s.parseInputEvent(msg.subject)?.kind, msg.data),
        'input event',
        (out) => {
          if (out) write(out.event, out.data);
        },
      ),
      // A notification only (ListToolChanges is the source of truth): names and CIDs pass, nothing else.
      this.listen(s.reviewRequested(account), payload(reviewEventData), 'review event', (out) => {
        if (out) write('tool-review-requested', out);
      }),
    ];
  }

  /** A guarded subscription of the registry's connection (`@mcpx/bus`' `listen`). */
  private listen<T>(subject: string, decode: (msg: Msg) => T, what: string, handle: (value: T) => void): Subscription {
    return listen(this.nc, subject, decode, handle, { what, log: this.log });
  }
}

/** The signed `SubscribeEvents` envelope of the stream's URL (`?envelope=<base64url JSON>`), its action checked. */
function subscribeEnvelope(url: URL): unknown {
  const raw = url.searchParams.get('envelope');
  if (raw === null) throw invalidInput('envelope', 'query parameter is required');
  let body: { action?: { type?: unknown } };
  try {
    body = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw invalidInput('envelope', 'must be base64url JSON');
  }
  if (body?.action?.type !== 'SubscribeEvents') throw invalidInput('action.type', 'must be SubscribeEvents');
  return body;
}
