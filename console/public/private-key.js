// What a pasted private key is, read from its PEM PKCS#8 structure (RFC 5208) without importing
// it, so the add-server form can say before anything is sent whether an algorithm can sign with
// it. Pure: no DOM, no WebCrypto. Nothing returned ever holds key material.

/** The algorithms a `private_key_jwt` client assertion may be signed with (what the registry takes). */
export const KEY_ALGS = ['ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
export const MAX_PRIVATE_KEY_BYTES = 16 * 1024;
const MIN_RSA_BITS = 2048;
const CURVE_OF_ALG = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' };
const PKCS8 = /^-----BEGIN PRIVATE KEY-----\r?\n([A-Za-z0-9+/=\s]+)\r?\n-----END PRIVATE KEY-----$/;
/** DER contents of the object identifiers a key's algorithm can be (hex). */
const OIDS = {
  '2a8648ce3d0201': 'ec',
  '2a864886f70d010101': 'rsa',
  '2a864886f70d01010a': 'rsa-pss',
  '2b6570': 'Ed25519',
  '2b6571': 'Ed448',
};
const CURVES = { '2a8648ce3d030107': 'P-256', '2b81040022': 'P-384', '2b81040023': 'P-521' };
const hex = (bytes) => [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');

/** One DER element at `at`: its tag, where its contents start and where it ends. */
function element(der, at) {
  const tag = der[at];
  let length = der[at + 1];
  let start = at + 2;
  if (tag === undefined || length === undefined) throw new Error('truncated');
  if (length > 0x80 && length <= 0x84) {
    const n = length - 0x80;
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + (der[start + i] ?? NaN);
    start += n;
  } else if (length >= 0x80) throw new Error('bad length');
  if (!(start + length <= der.length)) throw new Error('truncated');
  return { tag, start, end: start + length };
}

/** The bits of a DER INTEGER's contents (an RSA modulus). */
function integerBits(der, { start, end }) {
  while (start < end && der[start] === 0) start++;
  if (start === end) return 0;
  return (end - start - 1) * 8 + der[start].toString(2).length;
}

/**
 * What `pem` holds: `{kind: 'ec', curve}` (curve 'P-256', 'P-384', 'P-521' or 'another curve'),
 * `{kind: 'rsa', bits}`, `{kind: 'rsa-pss' | 'Ed25519' | 'Ed448' | 'unknown'}`, or
 * `{problem}` saying why it is not an unencrypted PEM PKCS#8 private key.
 */
export function describePrivateKey(pem) {
  const text = String(pem ?? '').trim();
  const convert = 'convert it with openssl pkcs8 -topk8 -nocrypt';
  if (text.startsWith('-----BEGIN ENCRYPTED PRIVATE KEY-----'))
    return { problem: `is encrypted: paste it unencrypted (${convert})` };
  const traditional = /^-----BEGIN (RSA|EC) PRIVATE KEY-----/.exec(text);
  if (traditional)
    return { problem: `is a traditional ${traditional[1]} key, not PKCS#8 (-----BEGIN PRIVATE KEY-----): ${convert}` };
  const body = PKCS8.exec(text)?.[1];
  const notPkcs8 = {
    problem: 'must be an unencrypted PEM PKCS#8 private key (-----BEGIN PRIVATE KEY----- … -----END PRIVATE KEY-----)',
  };
  if (body === undefined) return notPkcs8;
  try {
    const der = Uint8Array.from(atob(body.replace(/\s+/g, '')), (c) => c.charCodeAt(0));
    // PrivateKeyInfo ::= SEQUENCE { version INTEGER, algorithm SEQUENCE { OID, params }, privateKey OCTET STRING }
    const info = element(der, 0);
    const version = element(der, info.start);
    const algorithm = element(der, version.end);
    const oid = element(der, algorithm.start);
    const privateKey = element(der, algorithm.end);
    if (
      info.tag !== 0x30 ||
      version.tag !== 0x02 ||
      algorithm.tag !== 0x30 ||
      oid.tag !== 0x06 ||
      privateKey.tag !== 0x04
    )
      return notPkcs8;
    const kind = OIDS[hex(der.subarray(oid.start, oid.end))] ?? 'unknown';
    if (kind === 'ec') {
      const params = element(der, oid.end);
      const curve = params.tag === 0x06 ? CURVES[hex(der.subarray(params.start, params.end))] : undefined;
      return { kind, curve: curve ?? 'another curve' };
    }
    if (kind === 'rsa') {
      // RSAPrivateKey ::= SEQUENCE { version INTEGER, modulus INTEGER, … }
      const rsa = element(der, privateKey.start);
      const modulus = element(der, element(der, rsa.start).end);
      return { kind, bits: integerBits(der, modulus) };
    }
    return { kind };
  } catch {
    return notPkcs8;
  }
}

/** The algorithms that can sign with a described key (none for a problem or an unusable key). */
export function algsFor(key) {
  if (key.kind === 'ec') return KEY_ALGS.filter((alg) => CURVE_OF_ALG[alg] === key.curve);
  if (key.kind === 'rsa' && key.bits >= MIN_RSA_BITS)
    return KEY_ALGS.filter((alg) => alg.startsWith('RS') || alg.startsWith('PS'));
  return [];
}

/** A described key in words, e.g. "an EC P-384 key", "a 2048-bit RSA key". */
export function keyInWords(key) {
  if (key.kind === 'ec') return key.curve.startsWith('P-') ? `an EC ${key.curve} key` : 'an EC key on another curve';
  if (key.kind === 'rsa') return `a ${key.bits}-bit RSA key`;
  if (key.kind === 'rsa-pss') return 'an RSASSA-PSS-only key';
  if (key.kind === 'unknown') return 'a key of an unknown type';
  return `an ${key.kind} key`;
}

/** What `alg` needs of its key, in words. */
export function needsOf(alg) {
  return alg in CURVE_OF_ALG
    ? `an EC ${CURVE_OF_ALG[alg]} key`
    : `an RSA (not RSASSA-PSS) key of at least ${MIN_RSA_BITS} bits`;
}
