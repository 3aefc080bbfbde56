// The account key of this browser, kept as a non-extractable WebCrypto key in IndexedDB: the
// console can sign with it, and nothing in the page (nor a script injected into it) can read the
// key material out. A key file pasted in is imported non-extractable and its seed is not kept.
const DB_NAME = 'mcpx';
const STORE = 'keys';
const ID = 'account';
/** Where earlier consoles kept the raw seed; read once to move the key over, then removed. */
const LEGACY_STORAGE = 'mcpx.key';

function open() {
  return new Promise((resolve, reject) => {
    const req = globalThis.indexedDB.open(DB_NAME, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error('IndexedDB is not available'));
  });
}

async function tx(mode, fn) {
  const db = await open();
  try {
    return await new Promise((resolve, reject) => {
      const t = db.transaction(STORE, mode);
      const req = fn(t.objectStore(STORE));
      t.oncomplete = () => resolve(req.result);
      t.onerror = () => reject(t.error ?? new Error('IndexedDB transaction failed'));
    });
  } finally {
    db.close();
  }
}

/** `{principal, privateKey}` (a non-extractable CryptoKey), or null when this browser has none. */
export async function loadStoredKey() {
  const found = await tx('readonly', (s) => s.get(ID));
  return found && typeof found.principal === 'string' && found.privateKey ? found : null;
}

/** Remembers `{principal, privateKey}`; the CryptoKey is stored as is (structured clone). */
export async function storeKey(entry) {
  if (entry.privateKey.extractable) throw new Error('only a non-extractable key is kept');
  await tx('readwrite', (s) => s.put({ principal: entry.principal, privateKey: entry.privateKey }, ID));
}

export async function clearStoredKey() {
  await tx('readwrite', (s) => s.delete(ID));
  localStorage.removeItem(LEGACY_STORAGE);
}

/** The seed an earlier console left in localStorage (`{principal, seed}`), removed as it is read. */
export function takeLegacyKeyFile() {
  const saved = localStorage.getItem(LEGACY_STORAGE);
  localStorage.removeItem(LEGACY_STORAGE);
  try {
    return saved ? JSON.parse(saved) : null;
  } catch {
    return null;
  }
}
