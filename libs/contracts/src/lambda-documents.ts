import { LambdaDocumentError, buildLambdaDocument, documentCid, type LambdaToolDocument } from '@mcpx/domain';
import { ErrorCodes, WireError, invalidInput } from './errors.js';

/**
 * The document SetLambdaTool saves as `name` from the signer's `input`, and its CID: the registry
 * (which records the CID in the action's audit entry before the projector is asked) and the
 * projector (which stores the document) build it here, so both refuse a document alike — an mcp
 * document `conflict` (it comes from its server), any other bad field `invalid_input` naming it.
 */
export function lambdaToolDocument(name: unknown, input: unknown): { doc: LambdaToolDocument; cid: string } {
  let doc: LambdaToolDocument;
  try {
    doc = buildLambdaDocument(name, input);
  } catch (err) {
    if (!(err instanceof LambdaDocumentError)) throw err;
    if ((input as { kind?: unknown } | null)?.kind === 'mcp')
      throw new WireError(
        ErrorCodes.conflict,
        'mcp documents come from their server and cannot be saved as a lambda; disable the server for this agent instead',
        { field: err.field },
      );
    throw invalidInput(err.field, err.message);
  }
  return { doc, cid: documentCid(doc) };
}
