import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { KeyringEntry } from '@mcpx/config';
import {
  ErrorCodes,
  WireError,
  approvalDecidedEvent,
  invalidInput,
  tokenDecider,
  type ApprovalDecidedEvent,
} from '@mcpx/contracts';
import { encodeCanonical, sha256Hex } from '@mcpx/domain';
import type { ApprovalRecord, ApprovalStore } from '@mcpx/shared-state';
import type { Logger } from '@mcpx/log';
import type { TokenGrant } from './agent-tokens.js';
import type { DecisionAudit } from './decision-audit.js';

/** How a `requestState` of an approval question starts (told apart from an input request's id). */
export const APPROVAL_STATE_PREFIX = 'mcpx-apv1.';
/** The key of the approval question in `inputRequests` (and of its answer in `inputResponses`). */
export const APPROVAL_INPUT_KEY = 'mcpx_approval';
/**
 * The arguments are shown to the client's user whole, as the owner sees them (canonical JSON), or
 * not at all: past this many characters the call waits for the owner (nobody approves what they
 * were not shown).
 */
export const ARGUMENTS_IN_QUESTION_MAX = 8 * 1024;
/** A `requestState` longer than this is not one of ours (read no further). */
const STATE_MAX_CHARS = 1_024;

/**
 * What a sealed approval state binds: the approval, the tool, the arguments' hash, its deadline,
 * and the question's kind (`u`: the URL question of an owner's decision; absent: the token user's
 * form).
 */
interface StatePayload {
  a: string;
  n: string;
  h: string;
  e: number;
  k?: 'u';
}

/** The answer of the client's user, as applied: the approval id and what was decided. */
export interface UserVerdict {
  approvalId: string;
  /**
   * accept → approved, decline → denied, cancel (or nothing) → left to the owner; `resend`: the
   * answer to a URL question (the owner decides in the console): nothing decided here, the call
   * is re-sent and runs if the owner approved it.
   */
  answer: 'accept' | 'decline' | 'cancel' | 'resend';
}

/** The question of an approval, as `input_required` carries it. */
export interface ApprovalQuestion {
  inputRequests: Record<string, { method: 'elicitation/create'; params: Record<string, unknown> }>;
  requestState: string;
}

export interface UserApprovalsDeps {
  store: ApprovalStore;
  /** The registry's audit entry of each decision taken here. */
  audit: Pick<DecisionAudit, 'record'>;
  /** The deployment's key ring (the newest key seals); empty: a key of this process. */
  keyring: KeyringEntry[];
  log: Logger;
  /**
   * Tells the account's subscribers (a console open on the approval, a runtime waiting with
   * `callAwaitingApproval`) that the client's user decided: the `approval-decided` notice the
   * registry sends for an owner's decision (core NATS, at most once).
   */
  announce: (event: ApprovalDecidedEvent) => void;
  /** The console's base URL (`CONSOLE_URL`): where the owner decides an approval. */
  consoleUrl?: string;
}

/** Hex sha-256 of the canonical encoding of the arguments, as the proxy binds approvals; undefined when they have none. */
export function argumentsHash(args: Record<string, unknown>): string | undefined {
  try {
    return sha256Hex(encodeCanonical(args));
  } catch {
    return undefined;
  }
}

/** The additional data a state is sealed with: it opens only for this account and token. */
function stateAad(grant: TokenGrant): string {
  return `mcpx endpoint approval\u0000${grant.account}\u0000${grant.id}`;
}

/**
 * Approval by the MCP client's user: when the owner issued the token with
 * `userMayApprove`, an always_ask call that stops for approval is asked of the client's user as a
 * form elicitation ("Approve <tool> with <arguments>?"), carrying a `requestState` sealed with
 * the deployment's key (AES-256-GCM, bound to the account and the token; inside: the approval id,
 * the tool, the arguments' hash and the approval's deadline). The retry's answer decides the
 * approval as the token holder (recorded on the approval as `agent-token:<id>`), in the same
 * Redis step an owner's decision takes, so the first decision wins and a decided approval is never
 * decided again; the registry then writes its audit entry ({@link DecisionAudit}); the call runs
 * once, by the proxy's own consumption of the approval.
 */
export class UserApprovals {
  private readonly keys: Map<string, Buffer>;
  private readonly sealWith: { id: string; key: Buffer };

  constructor(private readonly deps: UserApprovalsDeps) {
    const ring = deps.keyring.length > 0 ? deps.keyring : [{ id: 'process', key: randomBytes(32) }];
    this.keys = new Map(ring.map((k) => [k.id, Buffer.from(k.key)]));
    const newest = ring.at(-1) as KeyringEntry;
    this.sealWith = { id: newest.id, key: Buffer.from(newest.key) };
  }

  /** Whether a client's `requestState` is meant as one of this endpoint's approval states. */
  static isState(state: unknown): state is string {
    return typeof state === 'string' && state.startsWith(APPROVAL_STATE_PREFIX);
  }

  private seal(payload: StatePayload, grant: TokenGrant): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.sealWith.key, iv);
    cipher.setAAD(Buffer.from(stateAad(grant), 'utf8'));
    const body = Buffer.concat([cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()]);
    return `${APPROVAL_STATE_PREFIX}${this.sealWith.id}.${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')}`;
  }

  private open(state: string, grant: TokenGrant): StatePayload | undefined {
    if (state.length > STATE_MAX_CHARS) return undefined;
    const rest = state.slice(APPROVAL_STATE_PREFIX.length);
    const dot = rest.indexOf('.');
    const key = dot > 0 ? this.keys.get(rest.slice(0, dot)) : undefined;
    if (key === undefined) return undefined;
    const raw = Buffer.from(rest.slice(dot + 1), 'base64url');
    if (raw.length < 12 + 16 + 2) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(stateAad(grant), 'utf8'));
      decipher.setAuthTag(raw.subarray(raw.length - 16));
      const text = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString(
        'utf8',
      );
      const p = JSON.parse(text) as Partial<StatePayload>;
      if (
        typeof p.a !== 'string' ||
        typeof p.n !== 'string' ||
        typeof p.h !== 'string' ||
        typeof p.e !== 'number' ||
        (p.k !== undefined && p.k !== 'u')
      )
        return undefined;
      return p as StatePayload;
    } catch {
      return undefined;
    }
  }

  /**
   * The console page where the owner decides an approval (`<console>/?approval=<id>#approvals`),
   * or undefined when no console URL is set.
   */
  link(approvalId: string): string | undefined {
    const base = this.deps.consoleUrl;
    return base === undefined ? undefined : `${base}/?approval=${encodeURIComponent(approvalId)}#approvals`;
  }

  /**
   * The owner's decision as a URL question (URL elicitation) for a client that declared it can
   * open one: the console link and a sealed state bound to this token, tool and arguments. Its
   * answer decides nothing: the retry re-sends the call, which runs once the owner approved it
   * (the proxy matches it by its digest). Undefined without a console URL, or for an approval
   * that is not this call's pending one.
   */
  async askUrl(
    grant: TokenGrant,
    tool: string,
    args: Record<string, unknown>,
    approvalId: string,
  ): Promise<ApprovalQuestion | undefined> {
    const url = this.link(approvalId);
    const hash = argumentsHash(args);
    if (url === undefined || hash === undefined) return undefined;
    const record = await this.deps.store.get(grant.account, approvalId);
    if (record === null || !this.isThisCall(record, grant, tool, hash) || record.status !== 'pending') return undefined;
    const requestState = this.seal({ a: record.id, n: tool, h: hash, e: record.expiresAt, k: 'u' }, grant);
    const message = `${tool} needs the account owner's approval (approval ${record.id}). Open the console to decide, then continue: the same call runs once approved.`;
    return {
      inputRequests: {
        [APPROVAL_INPUT_KEY]: {
          method: 'elicitation/create',
          params: { mode: 'url', message, url, elicitationId: record.id },
        },
      },
      requestState,
    };
  }

  /**
   * The question for an approval the proxy just asked for, when this token's user may answer it:
   * the form elicitation and the sealed state; undefined when it must wait for the owner (the
   * token has no such right, the approval is not this call's, or its arguments are too large to
   * show).
   */
  async ask(
    grant: TokenGrant,
    tool: string,
    args: Record<string, unknown>,
    approvalId: string,
  ): Promise<ApprovalQuestion | undefined> {
    if (!grant.userMayApprove) return undefined;
    const hash = argumentsHash(args);
    if (hash === undefined) return undefined;
    const record = await this.deps.store.get(grant.account, approvalId);
    if (record === null || !this.isThisCall(record, grant, tool, hash) || record.status !== 'pending') return undefined;
    const shown = record.argumentsJson;
    if (shown === undefined || shown.length > ARGUMENTS_IN_QUESTION_MAX) return undefined;
    const requestState = this.seal({ a: record.id, n: tool, h: hash, e: record.expiresAt }, grant);
    const message = `Approve ${tool} with these arguments?\n${shown}`;
    return {
      inputRequests: {
        [APPROVAL_INPUT_KEY]: {
          method: 'elicitation/create',
          params: { mode: 'form', message, requestedSchema: { type: 'object', properties: {} } },
        },
      },
      requestState,
    };
  }

  private isThisCall(record: ApprovalRecord, grant: TokenGrant, tool: string, hash: string): boolean {
    return (
      record.account === grant.account &&
      record.agent === grant.agent &&
      record.run === `ep-${grant.id}` &&
      record.tool === tool &&
      record.argsHash === hash
    );
  }

  /**
   * Applies the user's answer carried by a retry: the state must open for this token and name this
   * tool and these arguments (else `invalid_input` naming `requestState`, nothing decided); the
   * token must still have the right (else `forbidden`). accept approves, decline denies (each once:
   * an approval already decided, by the owner or an earlier answer, stays as it is), anything else
   * leaves it to the owner.
   */
  async answer(
    grant: TokenGrant,
    tool: string,
    args: Record<string, unknown>,
    state: string,
    response: unknown,
  ): Promise<UserVerdict> {
    const payload = this.open(state, grant);
    if (payload === undefined)
      throw invalidInput('requestState', 'not an approval question this endpoint asked this token');
    if (payload.n !== tool || payload.h !== argumentsHash(args))
      throw invalidInput('requestState', 'the approval question was asked for another tool or other arguments');
    // The owner decides a URL question's approval: its answer only says the call may be re-sent.
    if (payload.k === 'u')
      return {
        approvalId: payload.a,
        answer: (response as { action?: unknown } | undefined)?.action === 'accept' ? 'resend' : 'cancel',
      };
    if (!grant.userMayApprove)
      throw new WireError(
        ErrorCodes.forbidden,
        'this token may not approve its calls: the account owner decides them',
        { field: 'requestState', approvalId: payload.a },
      );
    const action = (response as { action?: unknown } | undefined)?.action;
    const answer = action === 'accept' || action === 'decline' ? action : 'cancel';
    if (answer === 'cancel') return { approvalId: payload.a, answer };
    const decision = answer === 'accept' ? 'approved' : 'denied';
    const out = await this.deps.store.decide(grant.account, payload.a, decision, tokenDecider(grant.id));
    if (out.ok) {
      this.deps.log.info('tool call approval decided by the token holder', {
        account: grant.account,
        approval: payload.a,
        decision,
        tool,
        token: grant.id,
      });
      try {
        this.deps.announce(approvalDecidedEvent(out.record, decision));
      } catch (err) {
        // The decision stands (it is in the store); only its notice is lost: ListApprovals says it.
        this.deps.log.warn('notice of a token holder decision not sent', { err: err as Error, approval: payload.a });
      }
      // Written by the registry, the audit log's owner, before the call goes on (retried; a
      // registry that never answers leaves the decision standing and the missing entry logged).
      await this.deps.audit.record(grant.account, payload.a);
    }
    return { approvalId: payload.a, answer };
  }
}
