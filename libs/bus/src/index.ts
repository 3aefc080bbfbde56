export { connectBus, ensureStreams } from './bus.js';
export type { Bus } from './bus.js';
