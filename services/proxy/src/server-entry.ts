/**
 * What a call needs to reach a server: where it is, the headers that authenticate it, and the
 * token the registry renews (its hash only, and when it expires). The registry's discovery reads
 * the same shape from the same rows (`@mcpx/credentials`).
 */
export type { ServerCredentials as ServerEntry } from '@mcpx/credentials';
