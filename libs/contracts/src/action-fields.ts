import { INPUT_REQUEST_ID_RE } from './inputs.js';
import { TASK_ID_RE, TASK_LIST_MAX } from './tasks.js';
import { CALL_PAGE } from './activity.js';
import { between, matching, text } from './field-rules.js';

/**
 * The grammar of the action API's fields, as field rules (ACTION_MAP's tables): what a field must
 * look like is checked once, by the dispatcher, before any handler runs. What a handler still
 * checks is meaning: that a named thing exists, a quota, a rule between fields.
 */

/** A run id is one subject token (`mcp.runs.ended.<acct>.<run>`). */
export const runId = matching(/^[A-Za-z0-9_-]{1,128}$/, '1-128 letters, digits, _ or -');
export const inputRequestId = matching(INPUT_REQUEST_ID_RE, 'an input request id (inp_…)');
export const approvalId = matching(/^apr_[A-Za-z0-9_-]{1,64}$/, 'an approval id (apr_…)');
export const agentTokenId = matching(/^at_[0-9a-f]{18}$/, 'a token id (at_ and 18 hex digits)');
export const taskId = matching(TASK_ID_RE, 'a task id (tsk_ and 24 letters or digits)');
/** The CID of a held tool change (ListToolChanges). */
export const changeCid = matching(/^b[a-z2-7]{20,120}$/, 'the CID of the held change (ListToolChanges)');
/** A name a person gives an agent token. */
export const agentTokenName = matching(/^[\p{L}\p{N} ._:@()/+-]{1,64}$/u, '1-64 letters, digits, spaces or ._:@()/+-');
/** An MCP server named by a caller (its grammar is checked where a server is made). */
export const serverRef = text(64);
/** A tool by its remote name. */
export const remoteTool = text(512);
/** A filter of the call log: 1 to 128 characters, no control character. */
const FILTER_TEXT = /^[^\u0000-\u001f\u007f]{1,128}$/u; // eslint-disable-line no-control-regex -- the control characters are what it refuses
export const filterText = matching(FILTER_TEXT, '1 to 128 characters, with no control characters');
/** A page of the call log's cursor (`ListCalls`' `nextCursor`). */
export const callCursor = matching(/^([0-9]{1,15})\.([1-9][0-9]{0,17})$/, 'a cursor from a previous page');
/** A time a caller sends (ISO 8601; read by the handler). */
export const isoTime = text(40);
export const callPageSize = between(1, CALL_PAGE.maxLimit);
export const taskPageSize = between(1, TASK_LIST_MAX);
