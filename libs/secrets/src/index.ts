export { SecretBox, oauthSecretAad, secretAad, vendorTokensAad } from './secret-box.js';
export type { Sealed } from './secret-box.js';
export { bindToOrigin, unbind, urlOrigin, valueForOrigin } from './secret-origin.js';
