import { ACTION_MAP, ActionTypes, WireError, openApiDocument } from '@mcpx/contracts';
import { dispatchedActionTypes } from '@mcpx/registry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';

type Doc = Record<string, any>;

const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/**
 * The structure OpenAPI 3.1 requires of a document (the fields this one uses): the version, info,
 * paths starting with `/`, operations with responses keyed by status, unique operationIds, every
 * `$ref` resolving inside the document, schema `type`s that JSON Schema knows, discriminator
 * mappings that resolve. Returns every problem found (none: valid).
 */
function openApi31Problems(doc: Doc): string[] {
  const problems: string[] = [];
  if (typeof doc.openapi !== 'string' || !/^3\.1\.\d+$/.test(doc.openapi))
    problems.push(`openapi: ${String(doc.openapi)} is not 3.1.x`);
  if (typeof doc.info?.title !== 'string' || typeof doc.info?.version !== 'string')
    problems.push('info: title and version are required strings');
  if (doc.paths === null || typeof doc.paths !== 'object') problems.push('paths: required object');
  const resolve = (ref: string): unknown => {
    if (!ref.startsWith('#/')) return undefined;
    let at: any = doc;
    for (const part of ref.slice(2).split('/')) at = at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    return at;
  };
  const operationIds = new Set<string>();
  for (const [path, item] of Object.entries<Doc>(doc.paths ?? {})) {
    if (!path.startsWith('/')) problems.push(`paths.${path}: must start with /`);
    for (const [method, op] of Object.entries<Doc>(item)) {
      if (!METHODS.has(method)) {
        problems.push(`paths.${path}.${method}: not an HTTP method`);
        continue;
      }
      if (typeof op.operationId === 'string') {
        if (operationIds.has(op.operationId)) problems.push(`operationId ${op.operationId} is not unique`);
        operationIds.add(op.operationId);
      }
      const responses = Object.entries<Doc>(op.responses ?? {});
      if (responses.length === 0) problems.push(`paths.${path}.${method}: no responses`);
      for (const [status, r] of responses) {
        if (!/^([1-5]\d\d|[1-5]XX|default)$/.test(status))
          problems.push(`paths.${path}.${method}.responses.${status}: not a status`);
        if (typeof r.description !== 'string')
          problems.push(`paths.${path}.${method}.responses.${status}: description required`);
      }
    }
  }
  for (const name of Object.keys(doc.components?.schemas ?? {})) {
    if (!/^[a-zA-Z0-9._-]+$/.test(name)) problems.push(`components.schemas.${name}: invalid name`);
  }
  const walk = (node: unknown, where: string): void => {
    if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${where}[${i}]`));
    if (node === null || typeof node !== 'object') return;
    const n = node as Doc;
    if (typeof n.$ref === 'string' && resolve(n.$ref) === undefined)
      problems.push(`${where}: $ref ${n.$ref} does not resolve`);
    if (where.includes('schema') || where.includes('components')) {
      const types = n.type === undefined ? [] : Array.isArray(n.type) ? n.type : [n.type];
      for (const t of types)
        if (typeof t === 'string' && !JSON_TYPES.has(t) && !where.endsWith('.properties'))
          problems.push(`${where}: type ${String(t)}`);
    }
    if (n.discriminator !== undefined) {
      if (typeof n.discriminator.propertyName !== 'string')
        problems.push(`${where}: discriminator.propertyName required`);
      for (const [k, v] of Object.entries<string>(n.discriminator.mapping ?? {}))
        if (resolve(v) === undefined) problems.push(`${where}: mapping ${k} does not resolve`);
    }
    for (const [k, v] of Object.entries(n)) walk(v, `${where}.${k}`);
  };
  walk(doc, '#');
  return problems;
}

describe('the action API as OpenAPI 3.1, served at GET /v1/openapi.json', () => {
  let h: RegistryHarness;
  let api: ApiClient;

  beforeAll(async () => {
    h = await RegistryHarness.start();
    api = new ApiClient(h.apiUrl);
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('is served without a signature, cacheable (ETag, Cache-Control, 304 on If-None-Match)', async () => {
    const res = await fetch(`${h.apiUrl}/v1/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('cache-control')).toMatch(/public, max-age=\d+/);
    const etag = res.headers.get('etag');
    expect(etag).toMatch(/^"[\w-]+"$/);
    const doc = (await res.json()) as Doc;
    expect(doc).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
    const again = await fetch(`${h.apiUrl}/v1/openapi.json`, { headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
  });

  it('is a valid OpenAPI 3.1 document (structure check), and the check finds a broken one', async () => {
    const doc = (await (await fetch(`${h.apiUrl}/v1/openapi.json`)).json()) as Doc;
    expect(openApi31Problems(doc)).toEqual([]);
    const broken = JSON.parse(JSON.stringify(doc)) as Doc;
    broken.openapi = '3.0.3';
    broken.components.schemas.SetMcpServerAction.allOf[0].properties.config = { $ref: '#/components/schemas/Nowhere' };
    delete broken.paths['/v1/actions'].post.responses;
    expect(openApi31Problems(broken)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^openapi/),
        expect.stringMatching(/Nowhere does not resolve/),
        expect.stringMatching(/no responses/),
      ]),
    );
  });

  it('describes every action the registry dispatches, and no other', async () => {
    const doc = (await (await fetch(`${h.apiUrl}/v1/openapi.json`)).json()) as Doc;
    const dispatched = dispatchedActionTypes().sort();
    expect(dispatched).toEqual(Object.keys(ActionTypes).sort());
    expect(Object.keys(doc['x-mcpx-actions']).sort()).toEqual(dispatched);
    const envelope = doc.components.schemas.Envelope;
    expect(Object.keys(envelope.properties.action.discriminator.mapping).sort()).toEqual(dispatched);
    expect(envelope.properties.action.oneOf).toHaveLength(dispatched.length);
    for (const type of dispatched) {
      expect(doc.components.schemas[`${type}Action`], type).toBeDefined();
      expect(doc.components.schemas[`${type}Response`], type).toBeDefined();
      expect(doc['x-mcpx-actions'][type].roles, type).toEqual(ACTION_MAP[type].roles);
    }
  });

  it('the live registry knows each documented action and refuses an undocumented one', async () => {
    const doc = (await (await fetch(`${h.apiUrl}/v1/openapi.json`)).json()) as Doc;
    const unknown = (e: unknown): boolean =>
      e instanceof WireError && e.code === 'invalid_input' && e.details.field === 'action.type';
    for (const type of Object.keys(doc['x-mcpx-actions'])) {
      // An empty request: refused for its fields (or answered), never as an unknown action.
      const outcome = await api.act(type, {}).then(
        () => 'answered',
        (e: unknown) => e,
      );
      expect(unknown(outcome), `${type}: ${String(outcome)}`).toBe(false);
    }
    const refused = await api.act('NoSuchAction', {}).catch((e: unknown) => e);
    expect(unknown(refused)).toBe(true);
    expect((refused as WireError).details.field).toBe('action.type');
  });
});
