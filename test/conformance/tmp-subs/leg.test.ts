import { it } from 'vitest';
import { startConformanceUpstream } from '../../servers/conformance-upstream.js';
import { runServerLeg, startServerLegs } from '../server-legs.js';

it('through 2026 server-stateless', async () => {
  const fixture = await startConformanceUpstream();
  const legs = await startServerLegs(fixture.url);
  try {
    const run = await runServerLeg('2026-07-28', legs.throughUrl);
    for (const [s, n] of run.notes) console.log('FAIL', s, n.slice(0, 3000));
    for (const [s, n] of run.warnings) console.log('WARN', s, n.slice(0, 1500));
  } finally {
    await legs.stop();
    await fixture.close();
  }
}, 600_000);
