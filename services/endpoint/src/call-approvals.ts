/**
 * The approval side of an endpoint call: the client's user's answer to an approval question this
 * endpoint asked, the question asked when a call waits for one, and the console link of a refusal.
 */
import { ErrorCodes, WireError, toWireError } from '@mcpx/contracts';
import { isRedisUnavailable, REDIS_RETRY_AFTER_MS } from '@mcpx/shared-state';
import type { ToolCallInput } from './call-input.js';
import type { UserApprovals } from './user-approvals.js';
import { APPROVAL_INPUT_KEY, type ApprovalQuestion } from './user-approvals.js';

/**
 * What the client's user answered (`answer`, unset when nothing could be decided): a refusal to
 * give as the call's result, or the approval to send the call with.
 */
export interface ApprovalAnswer {
  answer?: string;
  refusal?: WireError;
  approvalId: string | undefined;
}

/** A question asked of the client, as a form (its user decides) or a URL (the owner's console page). */
export interface AskedApproval {
  kind: 'form' | 'url';
  question: ApprovalQuestion;
}

export class CallApprovals {
  constructor(
    private readonly approvals: UserApprovals,
    private readonly onError: (err: Error) => void,
  ) {}

  /**
   * The answer of this client's user to an approval question this endpoint asked (`state` is its
   * `requestState`): declined or unanswered, a refusal; approved, the approval the call is sent
   * with (`approvalId` unset for a URL question's answer, which decides nothing: the call is
   * re-sent as it is and the proxy finds its approval by the call's digest).
   */
  async answer(input: ToolCallInput, state: string, approvalId: string | undefined): Promise<ApprovalAnswer> {
    const { grant, name } = input;
    let verdict;
    try {
      verdict = await this.approvals.answer(
        grant,
        name,
        input.arguments,
        state,
        input.inputResponses?.[APPROVAL_INPUT_KEY],
      );
    } catch (err) {
      if (err instanceof WireError) return { refusal: err, approvalId };
      // Nothing was decided and nothing ran: an outage is said as one, any other fault is ours.
      if (isRedisUnavailable(err))
        return {
          refusal: new WireError(
            ErrorCodes.unavailable,
            'approvals cannot be decided right now; answer again shortly',
            { dependency: 'redis', retryAfterMs: REDIS_RETRY_AFTER_MS },
          ),
          approvalId,
        };
      this.onError(err as Error);
      return { refusal: toWireError(err), approvalId };
    }
    const { answer } = verdict;
    if (answer === 'decline') {
      return {
        answer,
        approvalId,
        refusal: new WireError(
          ErrorCodes.approvalRefused,
          `${name}: the client's user declined the approval; the call did not run`,
          { approvalId: verdict.approvalId, reason: 'denied', decidedBy: 'client_user', tool: name },
        ),
      };
    }
    if (answer === 'cancel') {
      return {
        answer,
        approvalId,
        refusal: new WireError(
          ErrorCodes.approvalRequired,
          `${name} needs a human's approval before it runs; the client's user did not answer, so the account owner decides`,
          { approvalId: verdict.approvalId, tool: name },
        ),
      };
    }
    // Approved now (or decided before by the owner: the proxy's use of the approval says which).
    return { answer, approvalId: answer !== 'resend' ? verdict.approvalId : approvalId };
  }

  /**
   * The question of an approval the call waits for, when this client can answer one: a form when
   * the token's user may give it and the client answers forms; else, to a client that opens URL
   * questions, the console link where the owner decides it.
   */
  async question(input: ToolCallInput, approvalId: string): Promise<AskedApproval | undefined> {
    const { grant, name } = input;
    const asked = (
      kind: 'form' | 'url',
      q: Promise<ApprovalQuestion | undefined>,
    ): Promise<AskedApproval | undefined> =>
      q.then(
        (question) => (question === undefined ? undefined : { kind, question }),
        (e: unknown) => {
          this.onError(e as Error);
          return undefined;
        },
      );
    if (input.caps.elicitation === true && grant.userMayApprove) {
      const form = await asked('form', this.approvals.ask(grant, name, input.arguments, approvalId));
      if (form !== undefined) return form;
    }
    if (input.caps.elicitationUrl === true)
      return asked('url', this.approvals.askUrl(grant, name, input.arguments, approvalId));
    return undefined;
  }

  /** An approval's refusal with the console link where the owner decides it (`details.decideAt`), when one is set. */
  withLink(wire: WireError): WireError {
    const id = wire.details.approvalId;
    if (wire.code !== ErrorCodes.approvalRequired || typeof id !== 'string') return wire;
    const link = this.approvals.link(id);
    return link === undefined ? wire : new WireError(wire.code, wire.message, { ...wire.details, decideAt: link });
  }
}
