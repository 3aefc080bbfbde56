import type { ClientCapabilities } from '@modelcontextprotocol/client';

/**
 * What the connector declares to every remote server, in both eras and on every connection
 * (discovery's and the proxy's alike): it answers elicitations (a person or the runtime, forms and
 * URLs) and sampling (the runtime); it shares no roots. One declaration, because a server may list
 * different tools to clients of different capabilities (server-everything adds three for
 * elicitation and sampling): were discovery and the proxy to declare differently, each listing
 * would replace the other's and every granted agent's tools would flip with each.
 */
export const CONNECTOR_CAPABILITIES: ClientCapabilities = Object.freeze({
  elicitation: { form: {}, url: {} },
  sampling: {},
});
