import { afterAll, beforeAll } from 'vitest';
import { echoTool, startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import { RegistryHarness } from '../support/registry-harness.js';

/** A registry and two echo servers, one of each era. */
export interface EraServers {
  h: RegistryHarness;
  modern: TestMcpServer;
  legacy: TestMcpServer;
}

/**
 * A suite's registry and echo servers of both eras (the modern one serving `modernTools` too):
 * started before the suite's tests and handed to `use` (the suite keeps them in its own
 * variables), stopped after them.
 */
export function eraServersPerSuite(use: (started: EraServers) => void, modernTools: TestTool[] = []): void {
  let started: Partial<EraServers> = {};
  beforeAll(async () => {
    const [h, modern, legacy] = await Promise.all([
      RegistryHarness.start(),
      startTestMcpServer({ era: 'modern', tools: [echoTool(), ...modernTools] }),
      startTestMcpServer({ era: 'legacy', tools: [echoTool()] }),
    ]);
    started = { h, modern, legacy };
    use({ h, modern, legacy });
  });
  afterAll(async () => {
    await started.h?.stop();
    await Promise.all([started.modern?.close(), started.legacy?.close()]);
  });
}
