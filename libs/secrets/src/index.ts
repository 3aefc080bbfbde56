export { SecretBox, oauthSecretAad, secretAad, vendorTokensAad } from './secret-box.js';
export type { Sealed } from './secret-box.js';
