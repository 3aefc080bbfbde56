// The call request's decoder and its bounds live in `@mcpx/contracts` (`proxy-call.ts`). This
// re-export keeps the handler's import working until it reads the bound from there; then the file goes.
export { MAX_CALL_TIMEOUT_MS } from '@mcpx/contracts';
