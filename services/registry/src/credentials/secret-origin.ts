/**
 * The origin codec of sealed secret headers lives in `@mcpx/secrets` (the proxy opens what the
 * registry seals, so both read one codec); re-exported for the registry's modules.
 */
export { bindToOrigin, unbind, urlOrigin } from '@mcpx/secrets';
