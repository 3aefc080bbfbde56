import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import layering from '../../eslint/layering.js';
import { ROOT } from '../support/system.js';

/**
 * The floors rule (eslint/layering.js) on code that breaks it and code that keeps it, as if the
 * code sat at a path of the tree. The static checks run the same rule over the whole tree.
 */
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfigFile: true,
  overrideConfig: [
    {
      files: ['**/*.ts'],
      languageOptions: { parser: tseslint.parser },
      plugins: { layering },
      rules: { 'layering/floors': 'error' },
    },
  ],
});

async function problems(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) });
  return result!.messages.map((m) => m.message);
}

describe('the floors of the house', () => {
  it('a library imports only a lower floor', async () => {
    expect(await problems('libs/domain/src/x.ts', "import { x } from '@mcpx/contracts';\n")).toEqual([
      '@mcpx/domain may not import @mcpx/contracts: @mcpx/domain stands on nothing of the workspace (eslint/layering.js)',
    ]);
    expect(await problems('libs/bus/src/x.ts', "import { x } from '@mcpx/db';\n")).toEqual([
      '@mcpx/bus may not import @mcpx/db: @mcpx/bus stands on @mcpx/contracts, @mcpx/telemetry (eslint/layering.js)',
    ]);
    expect(
      await problems('libs/contracts/src/x.ts', "import { x } from '@mcpx/domain';\nexport * from './y.js';\n"),
    ).toEqual([]);
  });

  it('a service stands on libraries, never on another service, and a subpath counts as its package', async () => {
    expect(await problems('services/proxy/src/x.ts', "import { x } from '@mcpx/registry';\n")).toHaveLength(1);
    expect(await problems('services/proxy/src/x.ts', "export { x } from '@mcpx/endpoint/src/y.js';\n")).toHaveLength(1);
    expect(
      await problems(
        'services/proxy/src/x.ts',
        "import { x } from '@mcpx/config/trusted-proxies';\nimport { y } from '@mcpx/bus';\n",
      ),
    ).toEqual([]);
    expect(await problems('services/registry/src/x.ts', "import { x } from '@mcpx/console';\n")).toEqual([]);
    expect(await problems('cli/src/x.ts', "const m = await import('@mcpx/proxy');\n")).toHaveLength(1);
  });

  it('a relative import stays in its package; only a test may reach the shared test support', async () => {
    expect(await problems('services/proxy/src/x.ts', "import { x } from '../../registry/src/discovery.js';\n")).toEqual(
      [
        'a relative import must stay in @mcpx/proxy: "../../registry/src/discovery.js" leaves it (import the other package by its name)',
      ],
    );
    expect(
      await problems('libs/mcp-client/src/x.ts', "import { x } from '../../../test/servers/index.js';\n"),
    ).toHaveLength(1);
    expect(
      await problems('libs/mcp-client/src/test/x.test.ts', "import { x } from '../../../../test/servers/index.js';\n"),
    ).toEqual([]);
    expect(await problems('services/proxy/src/a/b.ts', "import { x } from '../c.js';\n")).toEqual([]);
  });

  it("the registry's rooms import only the rooms below them, and none the top floor", async () => {
    // Upward: the agents room standing on the servers room that stands on it.
    expect(
      await problems('services/registry/src/agents/x.ts', "import { redactServer } from '../servers/redaction.js';\n"),
    ).toEqual([
      "the registry's room agents/ may not import servers/: agents/ stands on shared, accounts, events, audit, catalog, builtins (REGISTRY_ROOMS, eslint/layering.js)",
    ]);
    // The shared floor stands on no other room; a room never reaches up to the transports or the wiring.
    expect(
      await problems('services/registry/src/shared/x.ts', "import { x } from '../catalog/remote-tools.js';\n"),
    ).toHaveLength(1);
    expect(
      await problems(
        'services/registry/src/discovery/x.ts',
        "import type { HttpDeps } from '../http/http-server.js';\n",
      ),
    ).toEqual([
      "the registry's room discovery/ may not import http/: that is the top floor, which stands on the rooms (eslint/layering.js)",
    ]);
    expect(
      await problems('services/registry/src/credentials/oauth/x.ts', "export { x } from '../../wiring.js';\n"),
    ).toHaveLength(1);
    expect(
      await problems('services/registry/src/catalog/x.ts', "const m = await import('../review/pin-store.js');\n"),
    ).toHaveLength(1);
    // A folder nobody gave a floor is refused until it has one.
    expect(
      await problems('services/registry/src/elsewhere/x.ts', "import { x } from '../shared/semaphore.js';\n"),
    ).toEqual([
      'services/registry/src/elsewhere/ is not a room of REGISTRY_ROOMS (eslint/layering.js): give it a floor',
    ]);
    // Down, within a room (nested folders included), and anything from the top floor: kept.
    expect(
      await problems(
        'services/registry/src/servers/x.ts',
        "import { findAgent } from '../agents/agents.actions.js';\nimport { y } from './redaction.js';\n",
      ),
    ).toEqual([]);
    expect(
      await problems(
        'services/registry/src/credentials/oauth/x.ts',
        "import { y } from '../auth-method.js';\nimport { CredentialError } from '../../shared/credential-error.js';\n",
      ),
    ).toEqual([]);
    expect(
      await problems('services/registry/src/http/x.ts', "import { dispatchAction } from '../actions/index.js';\n"),
    ).toEqual([]);
    expect(
      await problems('services/registry/src/wiring-x.ts', "import { Discovery } from './discovery/discovery.js';\n"),
    ).toEqual([]);
  });

  it("the console's type declarations alone may import the contracts' sources, types only", async () => {
    // The file as it is: eslint's own config does not lint it, so the rule is run on it here.
    const declarations = await readFile(join(ROOT, 'console/public/action-types.d.ts'), 'utf8');
    expect(await problems('console/public/action-types.d.ts', declarations)).toEqual([]);
    const types =
      "import type { ActionType } from '../../libs/contracts/src/index.js';\nexport type { ActionRequest } from '../../libs/contracts/src/index.js';\n";
    expect(await problems('console/public/other.d.ts', types)).toEqual([]);
    // A value import, another package's sources, a file that is not a declaration, or one elsewhere: still leaving.
    expect(
      await problems('console/public/other.d.ts', "import { ErrorCodes } from '../../libs/contracts/src/index.js';\n"),
    ).toHaveLength(1);
    expect(
      await problems('console/public/other.d.ts', "import type { Db } from '../../libs/db/src/index.js';\n"),
    ).toHaveLength(1);
    expect(await problems('console/public/other.ts', types)).toHaveLength(2);
    expect(
      await problems(
        'console/src/other.d.ts',
        "import type { ActionType } from '../../libs/contracts/src/index.js';\n",
      ),
    ).toHaveLength(1);
    expect(
      await problems('cli/src/x.d.ts', "import type { ActionType } from '../../libs/contracts/src/index.js';\n"),
    ).toHaveLength(1);
  });
});
