/**
 * The deployment files' defaults. No Docker
 * engine or cluster runs here, so the files themselves are read: what they would run with.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/system.js';

const compose = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
const k8s = (file: string): string => readFileSync(join(ROOT, 'deploy', 'k8s', file), 'utf8');

/** Every published port mapping of the compose file, by service (inline lists and `- "…"` items). */
function publishedPorts(text: string): Array<{ service: string; mapping: string }> {
  const out: Array<{ service: string; mapping: string }> = [];
  let service = '';
  let inPorts = false;
  for (const line of text.split('\n')) {
    const svc = /^ {2}([a-z][a-z0-9-]*):\s*$/.exec(line);
    if (svc?.[1] !== undefined) service = svc[1];
    const inline = /^\s+ports:\s*\[(.*)\]/.exec(line);
    if (inline?.[1] !== undefined) {
      for (const m of inline[1].matchAll(/"([^"]+)"/g)) if (m[1] !== undefined) out.push({ service, mapping: m[1] });
      inPorts = false;
      continue;
    }
    if (/^\s+ports:\s*$/.test(line)) {
      inPorts = true;
      continue;
    }
    const item = /^\s+-\s+"([^"]+)"/.exec(line);
    if (inPorts && item?.[1] !== undefined) out.push({ service, mapping: item[1] });
    else if (inPorts && !/^\s*(#.*)?$/.test(line)) inPorts = false;
  }
  return out;
}

describe('docker-compose.yml', () => {
  it('commits no key: SECRETS_KEYRING is required, and no 32-byte base64 key is in the file', () => {
    expect(compose).toMatch(/SECRETS_KEYRING: \$\{SECRETS_KEYRING:\?[^}]+\}/);
    expect(compose).not.toMatch(/SECRETS_KEYRING:-/);
    expect(compose).not.toMatch(/[A-Za-z0-9+/]{43}=/);
  });

  it('publishes every port on 127.0.0.1 but the registry API', () => {
    const ports = publishedPorts(compose);
    // Every service that publishes anything was seen (the parser did not lose track).
    expect(new Set(ports.map((p) => p.service))).toEqual(
      new Set([
        'nats',
        'postgres',
        'redis',
        'otel-collector',
        'registry',
        'projector',
        'proxy',
        'endpoint',
        'authorization-server',
      ]),
    );
    const open = ports.filter((p) => !p.mapping.startsWith('127.0.0.1:'));
    expect(open).toEqual([{ service: 'registry', mapping: '${REGISTRY_PORT:-8080}:8080' }]);
  });

  it('authenticates every Postgres, Redis and NATS connection with a password that is not in the file', () => {
    expect(compose).not.toMatch(/POSTGRES_HOST_AUTH_METHOD:\s*trust/);
    expect(compose).toMatch(/POSTGRES_PASSWORD: \$\{POSTGRES_PASSWORD:\?[^}]+\}/);
    expect(compose).toMatch(/DATABASE_URL: postgres:\/\/postgres:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432\/mcpx/);
    expect(compose).toMatch(/--requirepass \\"\$\$REDIS_PASSWORD\\"/);
    expect(compose).toMatch(/REDIS_PASSWORD: \$\{REDIS_PASSWORD:\?[^}]+\}/);
    expect(compose).toMatch(/REDIS_URL: redis:\/\/:\$\{REDIS_PASSWORD:\?[^}]+\}@redis:6379/);
    expect(compose).toMatch(/command: \["-c", "\/etc\/nats\/nats.conf"\]/);
    // Each service connects as its own user; the runtime's and the operator's users (outside the
    // compose file) are configured on the NATS server, their passwords required too.
    for (const service of ['REGISTRY', 'PROJECTOR', 'PROXY', 'ENDPOINT'])
      expect(compose).toContain(`NATS_PASSWORD: \${NATS_${service}_PASSWORD:?`);
    for (const user of ['RUNTIME', 'OPERATOR'])
      expect(compose).toContain(`NATS_${user}_PASSWORD: \${NATS_${user}_PASSWORD:?`);
  });

  it('bounds Redis and evicts nothing (a full Redis refuses writes, typed unavailable), and closes accounts to operator-created ones', () => {
    const redis = compose.slice(compose.indexOf('\n  redis:'), compose.indexOf('\n  otel-collector:'));
    expect(redis).toMatch(/--maxmemory 256mb --maxmemory-policy noeviction/);
    expect(compose).toMatch(/ACCOUNTS: \$\{ACCOUNTS:-closed\}/);
    expect(compose).not.toMatch(/ACCOUNTS: \$\{ACCOUNTS:-open\}|ACCOUNTS: open/);
  });

  it('runs every service in the production profile with its metrics on the internal port', () => {
    expect(compose).toMatch(/OUTBOUND_PROFILE: production/);
    for (const port of ['9080', '9081', '9082', '9083', '9084'])
      expect(compose).toContain(`INTERNAL_HTTP_PORT: "${port}"`);
  });
});

describe('deploy/k8s', () => {
  it.each([
    ['registry', '8080', '9080'],
    ['projector', '8081', '9081'],
    ['proxy', '8082', '9082'],
    ['authorization-server', '8084', '9084'],
  ])('%s: Prometheus scrapes the internal port, which the Service does not route to', (name, port, internal) => {
    const text = k8s(`${name}.yaml`);
    expect(text).toContain(`prometheus.io/port: "${internal}"`);
    expect(text).toContain(`{ name: INTERNAL_HTTP_PORT, value: "${internal}" }`);
    const service = text.slice(text.lastIndexOf('kind: Service'));
    expect(service).toContain(`port: ${port}`);
    expect(service).not.toContain(internal);
    expect(service).not.toContain('internal');
  });

  it('closes accounts (operator-created only) and states the bound Redis must have (maxmemory, noeviction)', () => {
    expect(k8s('registry.yaml')).toContain('- { name: ACCOUNTS, value: closed }');
    for (const name of ['projector', 'proxy', 'endpoint', 'authorization-server', 'config'])
      expect(k8s(`${name}.yaml`)).not.toMatch(/ACCOUNTS/);
    const datastores = k8s('datastores.yaml');
    expect(datastores).toMatch(/maxmemory-policy noeviction/);
    expect(datastores).toMatch(/maxmemory 256mb/);
  });

  it('keeps the database and Redis URLs (with their passwords) and the key ring in Secrets, with placeholders only', () => {
    const config = k8s('config.yaml');
    const configMap = config.slice(0, config.indexOf('---'));
    expect(configMap).not.toMatch(/DATABASE_URL|REDIS_URL|SECRETS_KEYRING/);
    expect(config).toMatch(/DATABASE_URL: postgres:\/\/mcpx:CHANGE_ME@/);
    expect(config).toMatch(/REDIS_URL: redis:\/\/:CHANGE_ME@/);
    expect(config).toMatch(/SECRETS_KEYRING: CHANGE_ME/);
    expect(config).not.toMatch(/[A-Za-z0-9+/]{43}=/);
  });
});
