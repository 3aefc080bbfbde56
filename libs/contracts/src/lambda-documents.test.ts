import { buildLambdaDocument, documentCid } from '@mcpx/domain';
import { describe, expect, it } from 'vitest';
import { WireError } from './errors.js';
import { lambdaToolDocument } from './lambda-documents.js';

/** The typed error `fn` throws (fails the test otherwise). */
function refusal(fn: () => unknown): WireError {
  try {
    fn();
  } catch (err) {
    if (err instanceof WireError) return err;
    throw err;
  }
  throw new Error('no refusal');
}

describe('lambdaToolDocument: the lambda rule the registry and the projector share', () => {
  it('builds the stored document and names it by its CID', () => {
    const input = { description: ' Kept. ', inputSchema: { type: 'object' } };
    const { doc, cid } = lambdaToolDocument('kept', input);
    expect(doc).toEqual(buildLambdaDocument('kept', input));
    expect(cid).toBe(documentCid(doc));
  });

  it('refuses an mcp document as a conflict and any other bad field as invalid input, naming the field', () => {
    expect(refusal(() => lambdaToolDocument('free', { kind: 'mcp', description: 'x' }))).toMatchObject({
      code: 'conflict',
      details: { field: 'document.kind' },
    });
    expect(refusal(() => lambdaToolDocument('bad name!', {}))).toMatchObject({
      code: 'invalid_input',
      details: { field: 'name' },
    });
    expect(refusal(() => lambdaToolDocument('ok', { enabled: 'yes' }))).toMatchObject({
      code: 'invalid_input',
      details: { field: 'document.enabled' },
    });
  });
});
