import { describe, expect, it } from 'vitest';
import { ClientMetadataError, MAX_CLIENT_METADATA_BYTES, fetchClientMetadata } from './client-metadata.js';

const ID = 'https://client.example/oauth/client.json';
const GOOD = {
  client_id: ID,
  client_name: 'Example client',
  redirect_uris: ['http://127.0.0.1:3000/cb', 'https://client.example/cb'],
  token_endpoint_auth_method: 'none',
};

/** A fetch that answers every request with `res` (the rules, not the network: the e2e test has the real fetch). */
function answering(res: () => Response): typeof fetch {
  return () => Promise.resolve(res());
}

const json =
  (body: unknown, headers: Record<string, string> = {}): (() => Response) =>
  () =>
    new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json', ...headers } });

async function refusal(fetch: typeof globalThis.fetch, id = ID): Promise<string> {
  try {
    await fetchClientMetadata(fetch, id);
  } catch (err) {
    expect(err).toBeInstanceOf(ClientMetadataError);
    expect((err as ClientMetadataError).code).toBe('invalid_client');
    return (err as Error).message;
  }
  throw new Error('the document was accepted');
}

describe('client ID metadata documents: what the authorization server accepts', () => {
  it('accepts a public client naming its own URL, its name from the document', async () => {
    expect(await fetchClientMetadata(answering(json(GOOD)), ID)).toEqual({
      clientId: ID,
      clientName: 'Example client',
      redirectUris: GOOD.redirect_uris,
    });
    // No name: the document's host stands in; control characters are dropped.
    expect((await fetchClientMetadata(answering(json({ ...GOOD, client_name: undefined })), ID)).clientName).toBe(
      'client.example',
    );
    expect(
      (await fetchClientMetadata(answering(json({ ...GOOD, client_name: 'A\u0000B\u202e' })), ID)).clientName,
    ).toBe('AB');
  });

  it('refuses client ids that are not https URLs with a path', async () => {
    const never = answering(json(GOOD));
    for (const id of [
      'http://client.example/c.json',
      'https://client.example/',
      'https://client.example/c.json#x',
      'https://u:p@client.example/c.json',
      'not a url',
      `https://client.example/${'a'.repeat(2100)}`,
    ]) {
      expect(await refusal(never, id)).toMatch(/client_id/);
    }
  });

  it('refuses documents that do not describe this public client', async () => {
    expect(await refusal(answering(json({ ...GOOD, client_id: 'https://other.example/c.json' })))).toMatch(
      /client_id is not the URL/,
    );
    expect(await refusal(answering(json({ ...GOOD, client_secret: 's' })))).toMatch(/secret/);
    expect(await refusal(answering(json({ ...GOOD, token_endpoint_auth_method: 'private_key_jwt' })))).toMatch(
      /token_endpoint_auth_method/,
    );
    expect(await refusal(answering(json({ ...GOOD, redirect_uris: [] })))).toMatch(/redirect_uris/);
    expect(await refusal(answering(json({ ...GOOD, redirect_uris: ['http://client.example/cb'] })))).toMatch(
      /https \(or http on loopback\)/,
    );
    expect(await refusal(answering(json({ ...GOOD, redirect_uris: ['https://client.example/cb#f'] })))).toMatch(
      /fragment/,
    );
    expect(await refusal(answering(json({ ...GOOD, grant_types: ['client_credentials'] })))).toMatch(/grant_types/);
    expect(await refusal(answering(json([GOOD])))).toMatch(/not a JSON object/);
  });

  it('refuses answers that are not a small JSON document', async () => {
    expect(
      await refusal(
        answering(() => new Response('{}', { status: 302, headers: { location: 'https://elsewhere.example/' } })),
      ),
    ).toMatch(/HTTP 302/);
    expect(
      await refusal(
        answering(() => new Response(JSON.stringify(GOOD), { status: 200, headers: { 'content-type': 'text/html' } })),
      ),
    ).toMatch(/application\/json/);
    expect(
      await refusal(
        answering(() => new Response('{not json', { status: 200, headers: { 'content-type': 'application/json' } })),
      ),
    ).toMatch(/not JSON/);
    // Too large, declared or not: refused at the bound, the rest never read.
    const big = JSON.stringify({ ...GOOD, padding: 'x'.repeat(MAX_CLIENT_METADATA_BYTES) });
    expect(
      await refusal(
        answering(
          () =>
            new Response(big, {
              status: 200,
              headers: { 'content-type': 'application/json', 'content-length': String(big.length) },
            }),
        ),
      ),
    ).toMatch(/larger than/);
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        c.enqueue(new TextEncoder().encode(' '.repeat(4096)));
      },
    });
    expect(
      await refusal(
        answering(() => new Response(stream, { status: 200, headers: { 'content-type': 'application/json' } })),
      ),
    ).toMatch(/larger than/);
  });

  it('says a failed fetch without its details', async () => {
    const failing = (() =>
      Promise.reject(new TypeError('fetch failed', { cause: new Error('ECONNREFUSED 10.0.0.1:443') }))) as typeof fetch;
    expect(await refusal(failing)).toBe('client metadata document could not be fetched from client.example');
  });
});
