/** A tool result as a client library hands it over. */
export type Result = Record<string, unknown> & {
  content?: Array<Record<string, unknown>>;
  _meta?: Record<string, unknown>;
};

/**
 * A result less what is not the server's to compare: the connector's `_meta` keys (`io.mcpx/…`,
 * which the test server forges to prove they are dropped), each server's own info, and
 * `resultType` (2026-07-28), at the result's and each block's level.
 */
export function lessConnectorKeys(result: Result): Result {
  const strip = (meta: unknown): Record<string, unknown> | undefined => {
    if (meta === null || typeof meta !== 'object') return undefined;
    const kept = Object.fromEntries(
      Object.entries(meta).filter(([k]) => !k.startsWith('io.mcpx/') && k !== 'io.modelcontextprotocol/serverInfo'),
    );
    return Object.keys(kept).length === 0 ? undefined : kept;
  };
  const withMeta = <T extends Record<string, unknown>>(v: T): T => {
    const { _meta, ...rest } = v;
    const meta = strip(_meta);
    return (meta === undefined ? rest : { ...rest, _meta: meta }) as T;
  };
  const { resultType: _resultType, ...rest } = result;
  return withMeta({ ...rest, content: result.content?.map((b) => withMeta(b)) });
}

/** The block types of `every_block` (test/servers/content-tools.ts), in the server's order. */
export const EVERY_BLOCK_TYPES = ['text', 'image', 'text', 'audio', 'resource_link', 'resource', 'resource', 'text'];
