// The shapes shared by the modules of `scripts/deps/`; `index.ts` re-exports the public ones.

export interface EnsureDependenciesOptions {
  databaseUrl: string;
  /** Unset: NATS is not this function's (`npm start` runs its own authenticated one, `nats-auth.ts`). */
  natsUrl?: string;
  redisUrl: string;
  /** Folder for data and logs of locally started servers, e.g. `<repo>/.data`. */
  dataDir: string;
  log: (line: string) => void;
  /** Defaults to the repository's `docker-compose.yml`. */
  composeFile?: string;
}

export interface RunningDependencies {
  /** What was started, e.g. `nats (local nats-server)`; empty when everything already ran. */
  started: string[];
  /**
   * The URLs the services must connect with: the configured ones, with the generated passwords in
   * them where Docker compose started Postgres or Redis (its services refuse to run without one).
   */
  databaseUrl: string;
  redisUrl: string;
  /** Stops what was started, newest first. Safe to call more than once. */
  stop(): Promise<void>;
}

export type DependencyName = 'postgres' | 'nats' | 'redis';

export interface Endpoint {
  name: DependencyName;
  label: string;
  host: string;
  port: number;
  /** The URL with credentials removed, for messages. */
  shownUrl: string;
}

export interface Stopper {
  label: string;
  stop(): Promise<void>;
  /** Best effort synchronous stop for `process.on('exit')`. */
  kill(): void;
}
