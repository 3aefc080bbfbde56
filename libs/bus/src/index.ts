export {
  DEFAULT_INBOX_PREFIX,
  STARTUP_WAIT_MS,
  connectBus,
  ensureStreams,
  isTransientStartupError,
  retryStartup,
} from './bus.js';
export type { Bus, BusCredentials, BusOptions } from './bus.js';
export type { BusLog } from './log.js';
export { readReply, request, serve, traceHeaders } from './request-reply.js';
export type { Endpoint, ValueDecoder } from './request-reply.js';
export { listen, payload, subjectOnly } from './listen.js';
export { notify, respond } from './notify.js';
export type { ListenOptions } from './listen.js';
export { JetStreamPublisher, PublishError } from './jetstream-publisher.js';
export type { JetStreamPublisherOptions, OutgoingEvent } from './jetstream-publisher.js';
export type { Reply } from '@mcpx/contracts';
export { startMicroService } from './micro-service.js';
export type { MicroService, MicroServiceEndpoint, MicroServiceOptions, ServiceMsg } from './micro-service.js';
