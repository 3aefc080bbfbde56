/** Why a request (or a connection) was refused before its body was in: the label of every metric and log line. */
export const InboundReason = {
  /** The body did not arrive within the body deadline: 408, closed. */
  deadline: 'deadline',
  /** The process's budget of buffered body bytes is spent: 503 with Retry-After, closed. */
  budget: 'budget',
  /** The peer address holds its cap of open sockets: 503 before any request is read, closed. */
  connections: 'connections',
  /** The body is larger than the route takes (declared or counted): 413, closed. */
  tooLarge: 'too_large',
} as const;
export type InboundReason = (typeof InboundReason)[keyof typeof InboundReason];

/** A refusal the guard answers with the face's own error shape (`InboundGuardOptions.answer`). */
export interface InboundRefusal {
  reason: Exclude<InboundReason, 'connections'>;
  /** 408, 503 or 413. */
  status: number;
  /** Set on 503: how long to wait (whole seconds, also sent as `Retry-After`). */
  retryAfterSeconds?: number;
  /** The bound that refused it and its value (ms or bytes): what a message may name. */
  bound: { name: string; limit: number };
}

const STATUS: Record<InboundRefusal['reason'], number> = { deadline: 408, budget: 503, too_large: 413 };

/** Seconds a client refused for the budget is told to wait. */
export const BUDGET_RETRY_AFTER_SECONDS = 2;

export function refusal(reason: InboundRefusal['reason'], bound: InboundRefusal['bound']): InboundRefusal {
  return {
    reason,
    status: STATUS[reason],
    bound,
    ...(reason === 'budget' ? { retryAfterSeconds: BUDGET_RETRY_AFTER_SECONDS } : {}),
  };
}

/** A refusal's own default text (a face may word it its way). */
export function refusalMessage(r: InboundRefusal): string {
  switch (r.reason) {
    case 'deadline':
      return `the request body did not arrive within ${r.bound.limit} ms (${r.bound.name})`;
    case 'budget':
      return 'too many request bodies are arriving at once; retry shortly';
    case 'too_large':
      return `the request body must be at most ${r.bound.limit} bytes`;
  }
}
