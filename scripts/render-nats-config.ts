// Writes the NATS authorization of the compose file (deploy/nats/nats.conf) and of the Helm
// release (deploy/nats-auth-values.yaml) from the permission model, so both say exactly what
// libs/config/src/nats-permissions.ts says:  node_modules/.bin/tsx scripts/render-nats-config.ts
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderComposeNatsConfig, renderHelmNatsAuthValues } from '../libs/config/src/nats-deploy-config.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
await writeFile(join(root, 'deploy', 'nats', 'nats.conf'), renderComposeNatsConfig());
await writeFile(join(root, 'deploy', 'nats-auth-values.yaml'), renderHelmNatsAuthValues());
process.stdout.write('wrote deploy/nats/nats.conf and deploy/nats-auth-values.yaml\n');
