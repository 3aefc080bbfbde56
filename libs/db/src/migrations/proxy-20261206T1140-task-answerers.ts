import type { Kysely } from 'kysely';

/**
 * Who may answer a task's questions besides a person (docs/tasks.md#questions): what the call that
 * made the task declared it answers (`answers`: forms, sampling, roots) and whether its agent lets
 * its runtime answer forms (`inputs.forms: "runtime"`), as JSON. Null: every question goes to a
 * person (tasks made before this column, and calls that declared nothing).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('proxy.tasks').addColumn('answerers', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('proxy.tasks').dropColumn('answerers').execute();
}
