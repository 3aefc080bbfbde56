export { SecretBox, oauthSecretAad, secretAad } from './secret-box.js';
export type { Sealed } from './secret-box.js';
