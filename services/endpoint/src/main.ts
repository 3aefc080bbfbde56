import { installTraceContext } from '@mcpx/telemetry';
import { loadEndpointConfig, startEndpoint } from './endpoint.js';

/**
 * The endpoint process: configuration from the environment (HTTP_PORT, ENDPOINT_PUBLIC_URL,
 * ENDPOINT_ALLOWED_HOSTS, ENDPOINT_ALLOWED_ORIGINS, ENDPOINT_CORS_ORIGINS, ENDPOINT_PAGE_SIZE,
 * ENDPOINT_LEAN_CALLS, ENDPOINT_AUTHORIZATION_SERVER, and the shared DATABASE_URL, NATS_*, REDIS_URL, SECRETS_KEYRING,
 * APPROVAL_TTL_MS, OUTBOUND_PROFILE), then the service.
 */
async function main(): Promise<void> {
  // The call path passes its trace context by hand (docs/operations.md#trace-context).
  installTraceContext('explicit');
  const endpoint = await startEndpoint(loadEndpointConfig(process.env));
  const stop = (): void =>
    void endpoint.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`endpoint failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
