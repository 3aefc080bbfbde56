/**
 * The origin codec of sealed secret headers lives in `@mcpx/secrets` (the registry seals what the
 * proxy opens, so both read one codec); re-exported for the proxy's modules.
 */
export { urlOrigin, valueForOrigin } from '@mcpx/secrets';
