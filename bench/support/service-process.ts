import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../test/servers/free-port.js';
import { entryArgs, type BundleName } from '../../test/support/bundles.js';
import { eventually } from '../../test/support/system.js';

/** A service of a checkout running as its own process, healthy, with what it logged. */
export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  logs: string[];
}

/**
 * Starts `service` of the checkout at `root` as its own process (in the bench's form: its bundle,
 * as the image runs it, or its sources through tsx; ./service-bundles.ts) on a free loopback port, and waits until its `/healthz` answers.
 * `nodeArgs` go before the entry (a profiler's flags); `env` on top of this process's.
 */
export async function startServiceProcess(opts: {
  root: string;
  service: BundleName;
  label: string;
  env: Record<string, string | undefined>;
  nodeArgs?: string[];
  timeoutMs: number;
}): Promise<ServiceProcess> {
  const port = await freePort();
  const logs: string[] = [];
  const entry = entryArgs(opts.service, { root: opts.root });
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...entry], {
    cwd: opts.root,
    env: {
      ...process.env,
      ...opts.env,
      HTTP_PORT: String(port),
      HTTP_HOST: '127.0.0.1',
      INTERNAL_HTTP_PORT: String(await freePort()),
      INSTANCE_ID: `${opts.label}-${port}`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => logs.push(d.toString()));
  child.stderr?.on('data', (d: Buffer) => logs.push(d.toString()));
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`${opts.label} exited: ${logs.join('')}`);
      return (await fetch(`${url}/healthz`).catch(() => undefined))?.ok ? true : undefined;
    },
    opts.timeoutMs,
    `${opts.label} healthy`,
  );
  return { url, child, logs };
}
