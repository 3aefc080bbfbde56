import { FieldRules, type Rule } from '@mcpx/contracts';
import { cborShape } from '@mcpx/stored';
import type { LambdaToolDocument } from '@mcpx/domain';

const { str, anyStr, bool, oneOf, jsonObject, checkedMap } = FieldRules;

/** A lambda's document: its fields checked, the whole kept as written (its CID is computed over all of it). */
const lambdaDocument: Rule<LambdaToolDocument> = checkedMap({
  kind: oneOf('lambda'),
  name: str,
  description: anyStr,
  inputSchema: jsonObject,
  enabled: bool,
});

/**
 * `projector.lambda_tools.doc_cbor`: written by the lambda actions, read by the agent's tool set.
 * Only the projector reads it, so its codec lives here, built as the credentials lib builds the
 * columns the proxy and the endpoint read (`cborShape`: checked both ways, a bad row a
 * `StoredShapeError` naming the column and field).
 */
export const LambdaToolColumn = cborShape('projector.lambda_tools.doc_cbor', lambdaDocument);
