export {
  ENVELOPE_MAX_SKEW_MS,
  generateKeyPair,
  publicKeyFromPrincipal,
  signingBytes,
  signAction,
  verifySignature,
} from './envelope.js';
export type { KeyPair } from './envelope.js';
export { parseEnvelope } from './envelope-parse.js';
