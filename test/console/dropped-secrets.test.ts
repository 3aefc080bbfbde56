import { describe, expect, it } from 'vitest';
// The console's own module, loaded as the browser loads it.
import { droppedSecretsText } from '../../console/public/dropped-secrets.js';

describe('the secrets a move dropped, as the console says it', () => {
  it('names each dropped header, the bearer token and the OAuth state', () => {
    expect(droppedSecretsText({ headers: ['X-Api-Key'], oauth: false })).toBe(
      'moved to another origin, so its stored secrets were dropped: re-enter the secret header X-Api-Key',
    );
    expect(droppedSecretsText({ headers: ['Authorization', 'X-A', 'X-B'], oauth: false })).toBe(
      'moved to another origin, so its stored secrets were dropped: re-enter the bearer token (Authorization) and the secret headers X-A, X-B',
    );
    expect(droppedSecretsText({ headers: [], oauth: true })).toBe(
      'moved to another origin, so its stored secrets were dropped: its OAuth client and tokens were forgotten: authorize again',
    );
  });

  it('says nothing when nothing was dropped or the answer has no such field', () => {
    expect(droppedSecretsText(undefined)).toBe('');
    expect(droppedSecretsText({ headers: [], oauth: false })).toBe('');
    expect(droppedSecretsText({ headers: 'X-Api-Key', oauth: 'yes' })).toBe('');
  });
});
