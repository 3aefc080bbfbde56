import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { AgentDefinition } from '@mcpx/contracts';
import { AgentDefinitionColumn } from '@mcpx/stored';
import type { AgentsTable, Database, Db } from '@mcpx/db';

export interface AgentRecord {
  id: string;
  accountId: string;
  name: string;
  definition: AgentDefinition;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

function toRecord(row: Selectable<AgentsTable>): AgentRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    // The stored shape and its reading are defined once, beside the proxy's read of it.
    definition: AgentDefinitionColumn.decode(row.definition_cbor),
    revision: row.revision,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export class AgentsRepository {
  constructor(private readonly db: Db) {}

  /** Finds an account's agent by id or by name. */
  async find(account: string, ref: string, trx: Kysely<Database> = this.db): Promise<AgentRecord | null> {
    const base = trx.selectFrom('registry.agents').selectAll().where('account_id', '=', account);
    const row =
      (await base.where('id', '=', ref).executeTakeFirst()) ?? (await base.where('name', '=', ref).executeTakeFirst());
    return row ? toRecord(row) : null;
  }

  async list(account: string): Promise<AgentRecord[]> {
    const rows = await this.db
      .selectFrom('registry.agents')
      .selectAll()
      .where('account_id', '=', account)
      .orderBy('name')
      .execute();
    return rows.map(toRecord);
  }

  async create(
    account: string,
    name: string,
    definition: AgentDefinition,
    trx: Kysely<Database> = this.db,
  ): Promise<AgentRecord> {
    const row = await trx
      .insertInto('registry.agents')
      .values({
        id: randomUUID(),
        account_id: account,
        name,
        definition_cbor: AgentDefinitionColumn.encode(definition),
        revision: 1,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toRecord(row);
  }

  async update(
    account: string,
    id: string,
    definition: AgentDefinition,
    trx: Kysely<Database> = this.db,
  ): Promise<AgentRecord> {
    const row = await trx
      .updateTable('registry.agents')
      .set((eb) => ({
        definition_cbor: AgentDefinitionColumn.encode(definition),
        revision: eb('revision', '+', 1),
        updated_at: new Date(),
      }))
      .where('account_id', '=', account)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return toRecord(row);
  }

  /** Agents of an account whose grant names a server (for DeleteMcpServer). Locks them. */
  async grantingServer(account: string, server: string, trx: Kysely<Database>): Promise<AgentRecord[]> {
    const rows = await trx
      .selectFrom('registry.agents')
      .selectAll()
      .where('account_id', '=', account)
      .forUpdate()
      .execute();
    return rows.map(toRecord).filter((a) => a.definition.mcpServers.includes(server));
  }
}
