import type { ActionType } from '@mcpx/contracts';
import type { OutboundPolicy } from '@mcpx/config';
import type { ToolNameStyle } from '@mcpx/domain';
import type { AgentsDeps } from '../agents/agents-deps.js';
import type { ToolPermissionsRepository } from '../catalog/tool-permissions.repository.js';
import type { OAuthService } from '../credentials/oauth/oauth-service.js';
import type { SecretsRepository } from '../credentials/secrets.repository.js';
import type { Discovery } from '../discovery/discovery.js';
import type { PinSettings } from '../review/review-deps.js';
import type { ActionHandler } from '../shared/action-handler.js';

/**
 * What the servers room's actions use: besides what the agents room does (a server's grants are
 * its agents'), how servers are discovered, authorized and sealed.
 */
export interface ServersDeps extends AgentsDeps {
  secrets: SecretsRepository;
  discovery: Discovery;
  style: ToolNameStyle;
  outbound: OutboundPolicy;
  /** The owner's per-tool permission overrides. */
  permissions: ToolPermissionsRepository;
  /** OAuth 2.1 for servers with `config.auth: 'oauth'` (absent: such servers stay `auth_required`). */
  oauth?: OAuthService;
  /** Contract pinning. Absent: off, OWNERs only review. */
  pins?: PinSettings;
}

/** The handler of a servers action. */
export type ServersAction<T extends ActionType> = ActionHandler<T, ServersDeps>;
