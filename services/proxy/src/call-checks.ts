import type { Attributes, Context, Span, Tracer } from '@opentelemetry/api';
import { ErrorCodes, WireError, type ProxyCallRequest } from '@mcpx/contracts';
import type { McpToolDocument } from '@mcpx/domain';
import type { ServerCredentials } from '@mcpx/stored';
import { McpAttributes, endWithOutcome } from '@mcpx/telemetry';
import { argumentsHash, type ApprovalGate } from './approval-gate.js';
import { approvalStep } from './call-decisions.js';
import type { CallMetrics, CallTarget } from './call-metrics.js';
import type { AgentEntry, Catalog, DocumentEntry } from './catalog.js';
import { missingToolError, unlistedToolError } from './held-tools.js';
import type { InputGate, Resumption } from './input-requests.js';
import type { OAuthTokens } from './oauth-tokens.js';
import { beforeSend, toWire } from './wire-errors.js';

/** The proxy's parts the checks read (of `CallHandlerDeps`), and the handler's metrics. */
export interface CallChecksDeps {
  catalog: Catalog;
  tracer: Tracer;
  metrics: CallMetrics;
  approvals?: ApprovalGate;
  inputs?: InputGate;
  oauth?: OAuthTokens;
}

/**
 * The steps of a call before it is admitted under its limits, in order: the agent and the tool's
 * document, the arguments against the contract, the grant, the answers of a resumed call, the
 * approval; then the server's credentials. Each step is a child span of the call's
 * (`proxy.validate`, `proxy.grant`, `proxy.approval`) and ends in a typed refusal or the next value.
 */
export class CallChecks {
  constructor(private readonly deps: CallChecksDeps) {}

  /** A step of the call: a child span of the call's, ended with {@link endWithOutcome}. */
  private step(ctx: Context, name: string, attributes: Attributes): Span {
    return this.deps.tracer.startSpan(name, { attributes }, ctx);
  }

  /** The agent and the tool's document (with its validator), from the catalog's warm entries when it has them. */
  async lookUp(req: ProxyCallRequest): Promise<{ agent: AgentEntry; entry: DocumentEntry }> {
    const { catalog } = this.deps;
    const agent = catalog.agentNow(req.account, req.agent) ?? (await catalog.agent(req.account, req.agent));
    if (agent === null) throw new WireError(ErrorCodes.notFound, 'this account has no such agent', { field: 'agent' });
    const cid = agent.tools.get(req.tool);
    if (cid === undefined) throw await missingToolError(catalog, req, agent.grants);
    const entry = catalog.documentNow(req.account, cid) ?? (await catalog.document(req.account, cid));
    // The registry no longer lists the tool: withheld a moment ago (say so), or gone.
    if (entry === null) throw await unlistedToolError(catalog, req, cid, agent.grants);
    return { agent, entry };
  }

  /**
   * The arguments checked against the contract. The defaults the server would fill itself are
   * filled here: from then on the call is these arguments, so what a person approves, what an
   * approval or input request is bound to, and what is sent are one value.
   */
  validated(req: ProxyCallRequest, entry: DocumentEntry, target: CallTarget, ctx: Context): ProxyCallRequest {
    const { doc } = entry;
    const validating = this.step(ctx, 'proxy.validate', {
      [McpAttributes.toolName]: doc.remoteName,
      [McpAttributes.server]: doc.server,
    });
    const check = entry.validate(req.arguments);
    // Names and flags only, never a value: a default filled, a part past the validator's bounds let through.
    if (check.ok) {
      validating.setAttributes({
        'mcpx.arguments.filled': check.filled !== undefined,
        'mcpx.validation.partial': check.partial !== undefined,
      });
      this.deps.metrics.validated(target, check);
    }
    endWithOutcome(validating, check.ok ? undefined : ErrorCodes.invalidArguments);
    if (!check.ok) {
      // Touch-expand: a miss answers with the real contract, and nothing is called.
      throw new WireError(
        ErrorCodes.invalidArguments,
        `arguments do not match ${doc.name}: ${check.errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ')}`,
        {
          errors: check.errors,
          contract: { name: doc.name, description: doc.description, inputSchema: doc.inputSchema },
        },
      );
    }
    return check.filled !== undefined ? { ...req, arguments: check.filled } : req;
  }

  /** The projection is a cache of the grant, never the authority: the grant itself is checked. */
  granted(agent: AgentEntry, doc: McpToolDocument, ctx: Context): void {
    const granting = this.step(ctx, 'proxy.grant', { [McpAttributes.server]: doc.server });
    const granted = agent.grants.has(doc.server);
    endWithOutcome(granting, granted ? undefined : ErrorCodes.notGranted);
    if (!granted)
      throw new WireError(ErrorCodes.notGranted, `the agent is not granted the ${doc.server} MCP server`, {
        server: doc.server,
      });
  }

  /**
   * A call re-sent with the answers to its server's questions: the input request is used once,
   * for this agent, run, tool and arguments only.
   */
  async resumption(req: ProxyCallRequest, doc: McpToolDocument, span: Span): Promise<Resumption | undefined> {
    if (req.inputRequestId === undefined) return undefined;
    if (this.deps.inputs === undefined)
      throw new WireError(ErrorCodes.inputRefused, 'input requests are not available here', {
        reason: 'unknown',
        tool: doc.name,
      });
    const resumption = await this.deps.inputs.resume(req, doc, argumentsHash(req.arguments)).catch((err: unknown) => {
      throw beforeSend(err);
    });
    span.setAttribute('mcpx.input_round', resumption.round);
    span.addEvent('input request answered: resuming the call', { 'mcpx.input_request': req.inputRequestId });
    return resumption;
  }

  /** An always_ask tool's call waits for a person; a call that passed its approval before it was asked needs none again. */
  async approved(
    req: ProxyCallRequest,
    doc: McpToolDocument,
    resumption: Resumption | undefined,
    span: Span,
    ctx: Context,
  ): Promise<boolean> {
    const approved = resumption?.approved ?? false;
    const approval = approvalStep(doc.permission, approved, this.deps.approvals !== undefined);
    if (approval === 'unavailable')
      throw new WireError(
        ErrorCodes.approvalRequired,
        `${doc.name} needs a human's approval, and approvals are not available here`,
        { tool: doc.name },
      );
    if (approval !== 'gate') return approved;
    const approving = this.step(ctx, 'proxy.approval', {
      [McpAttributes.toolName]: doc.remoteName,
      [McpAttributes.server]: doc.server,
    });
    try {
      await this.deps.approvals!.admit(req, doc, approving);
      endWithOutcome(approving, undefined, 'approved');
    } catch (err) {
      const wire = beforeSend(err);
      endWithOutcome(approving, toWire(wire).code);
      throw wire;
    }
    span.setAttribute('mcpx.approved', true);
    return true;
  }

  /** The server's credentials, the warm entry without an await; an oauth token about to expire is refreshed first. */
  async serverFor(req: ProxyCallRequest, doc: McpToolDocument, ctx: Context): Promise<ServerCredentials> {
    const { catalog, oauth } = this.deps;
    const server = catalog.serverNow(req.account, doc.server) ?? (await catalog.server(req.account, doc.server));
    if (server === null)
      throw new WireError(ErrorCodes.notFound, `no MCP server named ${doc.server}`, { server: doc.server });
    if (server.oauth !== undefined && oauth?.expiring(server))
      return await oauth.refreshed(req.account, doc.server, server, ctx);
    return server;
  }
}
