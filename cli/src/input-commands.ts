// `mcpx inputs list` and `mcpx inputs answer ID …`: a server's questions asked in the middle of a
// tool call (2026-07-28 input_required), answered by the account's owner.
import {
  ErrorCodes,
  WireError,
  type ActionRequest,
  type InputRequestItem,
  type InputRequestView,
  type RestrictedProperty,
} from '@mcpx/contracts';
import { UsageError, flag, flags, need, type ParsedArgs, type Print } from './args.js';
import { act, readKey, type CliEnv } from './client.js';
import { waitingCallsText } from './agent-names.js';

/** One question as a person reads it: the message, then the fields of a form or the URL to open. */
export function questionLines(q: InputRequestItem): string[] {
  if (q.kind === 'sampling') return [`  [${q.key}] a sampling request (answered by the agent's runtime)`];
  if (q.kind === 'roots') return [`  [${q.key}] a request for the client's roots (answered by the agent's runtime)`];
  const who = q.answerBy === 'runtime' ? " (answered by the agent's runtime)" : '';
  const lines = [`  [${q.key}] ${q.message}${who}`];
  if (q.kind === 'url') {
    lines.push(`    open in your browser: ${q.url}`, '    then: --done once you are through (or --decline / --cancel)');
    return lines;
  }
  const required = new Set(q.requestedSchema.required ?? []);
  for (const [name, p] of Object.entries(q.requestedSchema.properties))
    lines.push(`    ${name}${required.has(name) ? '' : '?'}: ${propertyText(p)}`);
  return lines;
}

function propertyText(p: RestrictedProperty): string {
  const title = typeof p.title === 'string' ? `  (${p.title})` : '';
  switch (p.type) {
    case 'string': {
      if (Array.isArray(p.enum)) return `one of ${(p.enum as string[]).join(' | ')}${title}`;
      const format = typeof p.format === 'string' ? ` (${p.format})` : '';
      return `text${format}${title}`;
    }
    case 'number':
    case 'integer': {
      const bounds = [
        typeof p.minimum === 'number' ? `>= ${p.minimum}` : '',
        typeof p.maximum === 'number' ? `<= ${p.maximum}` : '',
      ]
        .filter(Boolean)
        .join(', ');
      return `${p.type}${bounds ? ` ${bounds}` : ''}${title}`;
    }
    case 'boolean':
      return `true | false${title}`;
    case 'array':
      return `any of ${((p.items as { enum?: string[] } | undefined)?.enum ?? []).join(', ')} (comma-separated)${title}`;
  }
}

function inputLines(r: InputRequestView, names: ReadonlyMap<string, string>): string {
  const head = `${r.id}  ${r.tool}  run ${r.run}  agent ${names.get(r.agent) ?? r.agent}  round ${r.round}  expires ${r.expiresAt}`;
  const open = r.requests.filter((q) => !r.answered.includes(q.key));
  return [head, ...open.flatMap(questionLines)].join('\n');
}

/** A `NAME=VALUE` of `--accept`, typed by the question's schema (`true`, numbers, comma-separated multi-select). */
function typedValue(name: string, raw: string, p: RestrictedProperty | undefined): unknown {
  if (p === undefined) throw new UsageError(`--accept ${name}=…: the form has no field ${name}`);
  switch (p.type) {
    case 'boolean':
      if (raw !== 'true' && raw !== 'false') throw new UsageError(`--accept ${name}= takes true or false`);
      return raw === 'true';
    case 'number':
    case 'integer': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n)) throw new UsageError(`--accept ${name}= takes a number`);
      return n;
    }
    case 'array':
      return raw === '' ? [] : raw.split(',').map((s) => s.trim());
    case 'string':
      return raw;
  }
}

/**
 * The `NAME=VALUE` answers of `--accept`: `--accept a=1 --accept b=2`, and as a shell reads
 * `--accept name=Alice integer=5`, the words after it. A word that is no `NAME=VALUE` is refused,
 * never dropped: an answer the person gave is sent whole or not at all.
 */
function acceptValues(args: ParsedArgs): string[] {
  const given = flags(args, 'accept');
  const extra = args.positionals.slice(3);
  if (extra.length === 0) return given;
  if (given.length === 0) throw new UsageError(`unexpected ${extra[0]}: inputs answer takes one ID`);
  const bad = extra.find((w) => w.indexOf('=') <= 0);
  if (bad !== undefined) throw new UsageError(`--accept takes NAME=VALUE words; ${bad} is not one`);
  return [...given, ...extra];
}

/** `mcpx inputs list`: the input requests waiting for a person, each question with what it takes. */
export async function inputsList(env: CliEnv, _args: ParsedArgs, print: Print): Promise<void> {
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'ListInputRequests');
  print(res, await waitingCallsText(env, key, res.inputRequests, 'no calls are waiting for input', inputLines));
}

/**
 * `mcpx inputs answer ID (--accept NAME=VALUE [NAME=VALUE…] | --content JSON | --done | --decline | --cancel) [--key KEY]`:
 * answers one question of an input request. Values are typed by the form (the registry checks them
 * against the requested schema); `--done` accepts a URL question once the person is through.
 */
export async function inputsAnswer(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const id = need(args, 2, 'ID');
  const key = await readKey(env.keyFile);
  const accepts = acceptValues(args);
  const content = flag(args, 'content');
  const given = [
    accepts.length > 0 || content !== undefined ? 'accept' : undefined,
    flag(args, 'done') === 'true' ? 'done' : undefined,
    flag(args, 'decline') === 'true' ? 'decline' : undefined,
    flag(args, 'cancel') === 'true' ? 'cancel' : undefined,
  ] as const;
  const verbs = given.filter((v) => v !== undefined);
  if (verbs.length !== 1)
    throw new UsageError(
      'inputs answer ID takes one of --accept NAME=VALUE… (or --content JSON), --done, --decline, --cancel',
    );
  const verb = verbs[0]!;
  const questionKey = flag(args, 'key');
  const action: ActionRequest<'AnswerInputRequest'> = {
    id,
    action: verb === 'done' ? 'accept' : verb,
    ...(questionKey !== undefined ? { key: questionKey } : {}),
  };
  if (verb === 'accept') {
    if (content !== undefined) {
      try {
        action.content = JSON.parse(content) as Record<string, unknown>; // the registry checks it against the form
      } catch {
        throw new UsageError('--content takes a JSON object, e.g. \'{"confirm":true}\'');
      }
    } else {
      // The form tells each value's type: look the question up.
      const { inputRequests } = await act(env, key, 'ListInputRequests');
      const request = inputRequests.find((r) => r.id === id);
      if (request === undefined)
        throw new WireError(ErrorCodes.notFound, `id: no input request ${id} is waiting for a person`, { field: 'id' });
      const open = request.requests.filter((q) => q.answerBy === 'person' && !request.answered.includes(q.key));
      const question =
        questionKey !== undefined
          ? request.requests.find((q) => q.key === questionKey)
          : open.length === 1
            ? open[0]
            : undefined;
      if (question === undefined)
        throw new UsageError(
          `input request ${id} asks ${open.length} questions: name one with --key (${open.map((q) => q.key).join(', ')})`,
        );
      if (question.kind !== 'form')
        throw new UsageError(`question ${question.key} is not a form: answer it with --done, --decline or --cancel`);
      const values: Record<string, unknown> = {};
      for (const pair of accepts) {
        const eq = pair.indexOf('=');
        if (eq <= 0) throw new UsageError('--accept takes NAME=VALUE');
        const name = pair.slice(0, eq);
        values[name] = typedValue(
          name,
          pair.slice(eq + 1),
          Object.hasOwn(question.requestedSchema.properties, name)
            ? question.requestedSchema.properties[name]
            : undefined,
        );
      }
      action.content = values;
      if (questionKey === undefined) action.key = question.key;
    }
  }
  const { inputRequest } = await act(env, key, 'AnswerInputRequest', action);
  print(inputRequest, () =>
    inputRequest.status === 'answered'
      ? `answered ${inputRequest.id}: the waiting call goes on (or re-send it with --run ${inputRequest.run} --input ${inputRequest.id})`
      : `recorded the answer to ${action.key ?? ''} of ${inputRequest.id}; still waiting for: ${inputRequest.requests
          .filter((q) => q.answerBy === 'person' && !inputRequest.answered.includes(q.key))
          .map((q) => q.key)
          .join(', ')}`,
  );
}
