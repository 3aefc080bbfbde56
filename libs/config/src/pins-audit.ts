import { integerSetting } from './settings.js';

/**
 * Contract pinning and audit settings (read by the registry).
 * - `PIN_DEFAULT` (`off` | `review` | `strict`, default `off`): the pin of a new server whose
 *   SetMcpServer names none; `off` keeps servers behaving as before pinning existed.
 * - `PIN_WRITERS_MAY_REVIEW` (`true` | `false`, default `false`): whether WRITER signers may accept
 *   or reject tool changes (OWNERs always may).
 * - `AUDIT_RETENTION_DAYS` (default 400; `0` keeps everything): audit entries older than this are deleted.
 */
export interface PinAuditSettings {
  pinDefault: 'off' | 'review' | 'strict';
  writersMayReview: boolean;
  auditRetentionDays: number;
}

export const DEFAULT_AUDIT_RETENTION_DAYS = 400;

export function parsePinAudit(env: NodeJS.ProcessEnv): PinAuditSettings {
  const pin = env.PIN_DEFAULT === undefined || env.PIN_DEFAULT === '' ? 'off' : env.PIN_DEFAULT;
  if (pin !== 'off' && pin !== 'review' && pin !== 'strict')
    throw new Error('PIN_DEFAULT must be off, review or strict');
  const writers = env.PIN_WRITERS_MAY_REVIEW ?? '';
  if (writers !== '' && writers !== 'true' && writers !== 'false')
    throw new Error('PIN_WRITERS_MAY_REVIEW must be true or false');
  const days = integerSetting(env, 'AUDIT_RETENTION_DAYS', {
    fallback: DEFAULT_AUDIT_RETENTION_DAYS,
    min: 0,
    message: 'AUDIT_RETENTION_DAYS must be a whole number of days (0 keeps everything)',
  });
  return { pinDefault: pin, writersMayReview: writers === 'true', auditRetentionDays: days };
}
