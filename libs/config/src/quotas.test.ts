import { describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.js';
import { DEFAULT_QUOTAS, parseQuotas } from './quotas.js';

describe('the pending-per-account quotas', () => {
  it('default to 1,000 approvals and 200 input requests per account; each is set on its own, 0 is no cap', () => {
    expect(parseQuotas({})).toMatchObject({
      pendingApprovalsPerAgent: 50,
      pendingApprovalsPerAccount: 1_000,
      pendingInputsPerAccount: 200,
    });
    expect(DEFAULT_QUOTAS).toMatchObject({ pendingApprovalsPerAccount: 1_000, pendingInputsPerAccount: 200 });
    expect(parseQuotas({ QUOTA_PENDING_APPROVALS_PER_ACCOUNT: '7' })).toMatchObject({
      pendingApprovalsPerAccount: 7,
      pendingInputsPerAccount: 200,
    });
    expect(
      parseQuotas({ QUOTA_PENDING_INPUTS_PER_ACCOUNT: '0', QUOTA_PENDING_APPROVALS_PER_ACCOUNT: '' }),
    ).toMatchObject({ pendingApprovalsPerAccount: 1_000, pendingInputsPerAccount: 0 });
  });

  it('refuses a malformed value with a ConfigError naming the variable, never the value', () => {
    for (const name of ['QUOTA_PENDING_APPROVALS_PER_ACCOUNT', 'QUOTA_PENDING_INPUTS_PER_ACCOUNT']) {
      for (const raw of ['-1', '2.5', 'lots']) {
        let err: unknown;
        try {
          parseQuotas({ [name]: raw });
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(ConfigError);
        expect(err).toMatchObject({ code: 'invalid_config', setting: name });
        expect((err as Error).message).toContain(name);
        expect((err as Error).message).not.toContain(raw);
      }
    }
  });
});
