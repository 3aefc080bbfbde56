import { describe, expect, it } from 'vitest';
import { clientMetadataDocument, clientMetadataDocumentUrl, isClientMetadataUrl } from './client-metadata-document.js';

describe('the client ID metadata document', () => {
  it('names its own URL as the client id and the callback as its only redirect', () => {
    expect(clientMetadataDocument('https://mcp.example.com/connector')).toEqual({
      client_id: 'https://mcp.example.com/connector/v1/oauth/client-metadata.json',
      client_name: 'mcp-connector',
      redirect_uris: ['https://mcp.example.com/connector/v1/oauth/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
  });

  it('is offered as a client id only from an https public URL', () => {
    expect(clientMetadataDocumentUrl('https://mcp.example.com')).toBe(
      'https://mcp.example.com/v1/oauth/client-metadata.json',
    );
    expect(clientMetadataDocumentUrl('http://127.0.0.1:8080')).toBeUndefined();
    expect(clientMetadataDocumentUrl('')).toBeUndefined();
  });

  it('a client id URL is https with a path and no fragment (else the SDK refuses the whole flow)', () => {
    expect(isClientMetadataUrl('https://a.example/c.json')).toBe(true);
    expect(isClientMetadataUrl('https://a.example/')).toBe(false);
    expect(isClientMetadataUrl('https://a.example/c.json#x')).toBe(false);
    expect(isClientMetadataUrl('http://a.example/c.json')).toBe(false);
    expect(isClientMetadataUrl('not a url')).toBe(false);
  });
});
