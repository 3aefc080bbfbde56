import { readdirSync } from 'node:fs';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';

const lines: string[] = [];
const db = new Kysely<any>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (k) => new PostgresIntrospector(k),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
  log: (e) => {
    lines.push(e.query.sql.replace(/\s+/g, ' ').trim() + ' | ' + JSON.stringify(e.query.parameters));
  },
});
for (const f of readdirSync('./src/migrations').filter((f) => /^\w+-\d{8}T\d{4}-.*\.ts$/.test(f)).sort()) {
  const m = await import(`./src/migrations/${f.replace(/\.ts$/, '.js')}`);
  lines.push(`=== ${f} up`);
  await m.up(db);
  lines.push(`=== ${f} down`);
  if (m.down) await m.down(db);
}
process.stdout.write(lines.join('\n') + '\n');
