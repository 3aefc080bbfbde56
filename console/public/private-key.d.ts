/** See private-key.js. */
export const KEY_ALGS: readonly string[];
export const MAX_PRIVATE_KEY_BYTES: number;
export type DescribedKey =
  | { kind: 'ec'; curve: 'P-256' | 'P-384' | 'P-521' | 'another curve'; problem?: undefined }
  | { kind: 'rsa'; bits: number; problem?: undefined }
  | { kind: 'rsa-pss' | 'Ed25519' | 'Ed448' | 'unknown'; problem?: undefined }
  | { problem: string; kind?: undefined };
export function describePrivateKey(pem: string): DescribedKey;
export function algsFor(key: DescribedKey): string[];
export function keyInWords(key: DescribedKey): string;
export function needsOf(alg: string): string;
