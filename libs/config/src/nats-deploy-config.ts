/**
 * The NATS authorization of the compose file and of `deploy/` (Helm values), rendered from the one
 * permission model (`nats-permissions.ts`) with every password read from an environment variable
 * of the nats-server, so the committed files hold no secret. `scripts/render-nats-config.ts`
 * writes them; a test keeps the committed files equal to this rendering.
 */
import {
  NatsRoles,
  natsUserEntries,
  renderNatsServerConfig,
  type NatsRole,
  type NatsUser,
} from './nats-permissions.js';

/** The variable each user's password is read from, in the nats-server's environment and in the services'. */
export const NATS_PASSWORD_ENV: Readonly<Record<NatsRole, string>> = {
  registry: 'NATS_REGISTRY_PASSWORD',
  projector: 'NATS_PROJECTOR_PASSWORD',
  proxy: 'NATS_PROXY_PASSWORD',
  endpoint: 'NATS_ENDPOINT_PASSWORD',
  runtime: 'NATS_RUNTIME_PASSWORD',
  operator: 'NATS_OPERATOR_PASSWORD',
};

/** One user per role, named after it, its password from {@link NATS_PASSWORD_ENV}. */
export function deployNatsUsers(): NatsUser[] {
  return NatsRoles.map((role) => ({ user: role, role, password: { env: NATS_PASSWORD_ENV[role] } }));
}

/** `deploy/nats/nats.conf`: the compose file's nats-server (client 4222, monitoring 8222, JetStream in /data). */
export function renderComposeNatsConfig(): string {
  return renderNatsServerConfig({
    users: deployNatsUsers(),
    host: '0.0.0.0',
    port: 4222,
    monitorPort: 8222,
    storeDir: '/data',
  });
}

/**
 * `deploy/nats-auth-values.yaml`: Helm values for the official chart (1.x) merged into its
 * nats.conf — the users and their permissions, each password `<< $VAR >>` (the chart writes it
 * unquoted, so nats-server reads the variable) from the Secret `mcpx-nats-users` (key = user).
 */
export function renderHelmNatsAuthValues(): string {
  const users = natsUserEntries(deployNatsUsers()).map((e) => {
    const env = typeof e.password === 'string' ? undefined : e.password.env;
    return [
      `        - user: ${e.user}`,
      `          password: "<< $${env ?? ''} >>"`,
      `          permissions: ${JSON.stringify(e.permissions)}`,
    ].join('\n');
  });
  const env = NatsRoles.map(
    (role) =>
      `    ${NATS_PASSWORD_ENV[role]}:\n      valueFrom:\n        secretKeyRef: { name: mcpx-nats-users, key: ${role} }`,
  );
  return [
    '# Generated from libs/config/src/nats-permissions.ts (scripts/render-nats-config.ts): do not edit.',
    "# The stack's NATS users and what each may do (docs/bus.md#users). Use with nats-values.yaml:",
    '#   helm install nats nats/nats -n nats -f deploy/nats-values.yaml -f deploy/nats-auth-values.yaml',
    '# The passwords come from the Secret mcpx-nats-users in the nats namespace (deploy/README.md).',
    'config:',
    '  merge:',
    '    authorization:',
    '      users:',
    ...users,
    'container:',
    '  env:',
    ...env,
    '',
  ].join('\n');
}
