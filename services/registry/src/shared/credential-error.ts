/**
 * A credential that could not be prepared for a probe: `message` is for the owner (never a
 * secret) and becomes the recorded error; `authRequired` when only the owner can fix it.
 */
export class CredentialError extends Error {
  override readonly name = 'CredentialError';
  constructor(
    message: string,
    readonly authRequired = false,
  ) {
    super(message);
  }
}
