import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { decodeApprovalDecidedEvent, decodeInputAnsweredEvent, guardCallback, type CallbackLog } from '@mcpx/contracts';

/** Decisions on one approval, as `mcp.approvals.decided.<acct>` announces them (at most once each). */
export interface DecisionWatch {
  /** Resolves at the next decision on the approval, or after `ms` (the event may be lost: then re-ask). */
  next(ms: number): Promise<void>;
  close(): void;
}

export function watchDecisions(nc: NatsConnection, subject: string, approvalId: string): DecisionWatch {
  return watchEvents(nc, subject, (bytes) => decodeApprovalDecidedEvent(bytes).approvalId === approvalId);
}

/** Answers to one input request, as `mcp.inputs.answered.<acct>` announces them (at most once). */
export function watchInputAnswers(nc: NatsConnection, subject: string, inputRequestId: string): DecisionWatch {
  return watchEvents(nc, subject, (bytes) => decodeInputAnsweredEvent(bytes).inputRequestId === inputRequestId);
}

/**
 * The runtime's library stands below `@mcpx/bus` (it brings no JetStream and no logger of its own),
 * so it subscribes with the same guard the bus's `listen` uses: a malformed notification is dropped
 * (the waiter re-asks after `ms` anyway) and nothing is thrown into the connection's reader, which
 * would close it. Nothing is logged: a runtime's log is its own.
 */
const SILENT: CallbackLog = { warn: () => undefined, error: () => undefined };

function watchEvents(nc: NatsConnection, subject: string, matches: (bytes: Uint8Array) => boolean): DecisionWatch {
  let decided = false;
  let wake: (() => void) | undefined;
  const sub: Subscription = nc.subscribe(subject, {
    callback: guardCallback(SILENT, 'decision', (msg) => {
      // Strictly decoded by `matches`.
      if (!matches(msg.data)) return;
      decided = true;
      wake?.();
    }),
  });
  return {
    next(ms: number): Promise<void> {
      if (decided) {
        decided = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          wake = undefined;
          decided = false;
          resolve();
        };
        const timer = setTimeout(done, ms);
        wake = done;
      });
    },
    close(): void {
      sub.unsubscribe();
      wake?.();
    },
  };
}
