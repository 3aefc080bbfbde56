import type { ToolContract } from './contract-diff.js';
import { isPlainObject, type RemoteTool } from './types.js';

/**
 * What a reviewer should look at in a tool's contract. Warnings inform a review and never decide
 * it: nothing is accepted (or refused) because a warning is, or is not, there.
 */
export const ContractWarningCodes = {
  /** Zero-width or bidirectional control characters, Unicode tag characters, HTML comments. */
  hiddenText: 'hidden_text',
  /** The description names another tool of the account (another server's tools included). */
  namesOtherTools: 'names_other_tools',
  /** The description tells the model what to do (with other tools, with the user, with its instructions). */
  instructsModel: 'instructs_model',
  /** A description longer than {@link LONG_DESCRIPTION_CHARS}. */
  longDescription: 'long_description',
  /** A parameter name, enum value or default that reads as an instruction. */
  instructionInParameter: 'instruction_in_parameter',
  /** `readOnlyHint: true` was dropped. */
  readOnlyDropped: 'read_only_dropped',
  /** `destructiveHint: true` was added. */
  destructiveAdded: 'destructive_added',
  /** The tool's name uses characters that look like others (a homoglyph), or looks like another tool's name. */
  confusableName: 'confusable_name',
} as const;
export type ContractWarningCode = (typeof ContractWarningCodes)[keyof typeof ContractWarningCodes];

export interface ContractWarning {
  code: ContractWarningCode;
  /** Where: `description`, `title`, `name`, `inputSchema/<path>`, `annotations`. */
  field: string;
  message: string;
}

/** Characters in a description above this count earn a warning. */
export const LONG_DESCRIPTION_CHARS = 1_500;

// Zero-width, joiners, word joiner and invisible operators, BOM, Mongolian vowel separator, soft hyphen.
const ZERO_WIDTH = /[\u200B-\u200D\u2060-\u2064\uFEFF\u180E\u00AD]/u;
// Bidirectional embeddings, overrides and isolates, marks.
const BIDI = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/u;
// Unicode tag characters (invisible ASCII twins, used to smuggle text).
const TAGS = /[\u{E0000}-\u{E007F}]/u;
const HTML_COMMENT = /<!--[\s\S]*?(-->|$)/;

const INSTRUCTIONS: readonly RegExp[] = [
  /\bignore\s+(all\s+|any\s+|the\s+)?(previous|prior|above|other|earlier)\b/i,
  /\b(disregard|forget|override)\s+(all\s+|any\s+|the\s+|your\s+)?(previous|prior|system|other|earlier)?\s*(instructions?|rules?|prompts?|tools?)\b/i,
  /\b(do\s+not|don'?t|never)\s+(tell|inform|mention|show|reveal|alert|notify)\b/i,
  /\b(before|after|instead\s+of|whenever|when)\s+(using|calling|invoking|running)\s+\S+/i,
  /\b(always|first|must|should)\s+(call|use|invoke|run|send|read|pass|include)\b/i,
  /\byou\s+(must|should|are\s+required\s+to|have\s+to|need\s+to)\b/i,
  /\b(system\s+prompt|your\s+instructions|the\s+user\s+(must|should)\s+not)\b/i,
  /<\s*\/?\s*(important|system|instructions?|secret)\s*>/i,
  /\b(secretly|silently|without\s+(telling|asking|informing))\b/i,
  /\b(api[_\s-]?keys?|passwords?|private\s+keys?|ssh|\.env|credentials?)\b.*\b(send|include|pass|read|attach|append)\b/i,
];

function instructionLike(text: string): boolean {
  return INSTRUCTIONS.some((re) => re.test(text));
}

function hidden(text: string): string | undefined {
  if (ZERO_WIDTH.test(text)) return 'zero-width characters';
  if (BIDI.test(text)) return 'bidirectional control characters';
  if (TAGS.test(text)) return 'Unicode tag characters';
  if (HTML_COMMENT.test(text)) return 'an HTML comment';
  return undefined;
}

// Letters of other scripts that look like Latin ones (the usual homoglyphs), mapped to them.
const CONFUSABLES: Record<string, string> = {
  а: 'a',
  е: 'e',
  о: 'o',
  р: 'p',
  с: 'c',
  у: 'y',
  х: 'x',
  і: 'i',
  ј: 'j',
  ѕ: 's',
  ԁ: 'd',
  ɡ: 'g',
  һ: 'h',
  ӏ: 'l',
  ԛ: 'q',
  ԝ: 'w',
  А: 'A',
  В: 'B',
  Е: 'E',
  К: 'K',
  М: 'M',
  Н: 'H',
  О: 'O',
  Р: 'P',
  С: 'C',
  Т: 'T',
  Х: 'X',
  І: 'I',
  Ј: 'J',
  Ѕ: 'S',
  α: 'a',
  ο: 'o',
  ρ: 'p',
  ν: 'v',
  ι: 'i',
  κ: 'k',
  τ: 't',
  υ: 'u',
  χ: 'x',
  Α: 'A',
  Β: 'B',
  Ε: 'E',
  Ζ: 'Z',
  Η: 'H',
  Ι: 'I',
  Κ: 'K',
  Μ: 'M',
  Ν: 'N',
  Ο: 'O',
  Ρ: 'P',
  Τ: 'T',
  Υ: 'Y',
  Χ: 'X',
  ı: 'i',
  ℓ: 'l',
  '０': '0',
  '１': '1',
  ｌ: 'l',
  ｏ: 'o',
};

/** A name with look-alike letters mapped to Latin ones, lowercased: two names that look alike have equal skeletons. */
export function nameSkeleton(name: string): string {
  let out = '';
  for (const ch of name.normalize('NFKC')) out += CONFUSABLES[ch] ?? ch;
  return out.toLowerCase().replace(/[-_\s.]+/g, '_');
}

export interface WarningContext {
  /** The remote tool (its raw name and description, before normalisation). */
  tool: RemoteTool;
  /** Its contract as a document would carry it. */
  contract: ToolContract;
  /** The accepted contract it would replace, if any. */
  previous?: ToolContract;
  /** Names of the account's other tools (remote and projected names of every server). */
  otherTools?: readonly string[];
}

/** The warnings of one tool contract (pure; bounded work per tool). */
export function contractWarnings(ctx: WarningContext): ContractWarning[] {
  const out: ContractWarning[] = [];
  const { tool, contract } = ctx;
  const description = typeof tool.description === 'string' ? tool.description : contract.description;
  for (const [field, text] of [
    ['name', tool.name],
    ['title', typeof tool.title === 'string' ? tool.title : (contract.title ?? '')],
    ['description', description],
  ] as const) {
    const why = hidden(text);
    if (why !== undefined)
      out.push({
        code: ContractWarningCodes.hiddenText,
        field,
        message: `the ${field} holds ${why}, which a reviewer cannot see and a model reads`,
      });
  }
  if ([...description].length > LONG_DESCRIPTION_CHARS) {
    out.push({
      code: ContractWarningCodes.longDescription,
      field: 'description',
      message: `the description is ${[...description].length} characters long (more than ${LONG_DESCRIPTION_CHARS}): read it whole`,
    });
  }
  if (instructionLike(description))
    out.push({
      code: ContractWarningCodes.instructsModel,
      field: 'description',
      message: 'the description tells the model what to do (with other tools, the user or its instructions)',
    });
  // Identifier-like words of the description, looked up once each (no pattern per name).
  const words = new Set(
    (description.match(/[A-Za-z0-9_.-]+/g) ?? []).flatMap((w) => [
      w.toLowerCase(),
      w.toLowerCase().replace(/[.-]+$/, ''),
    ]),
  );
  const own = tool.name.toLowerCase();
  const named = (ctx.otherTools ?? []).filter(
    (n) => n.length >= 4 && n.toLowerCase() !== own && words.has(n.toLowerCase()),
  );
  if (named.length > 0)
    out.push({
      code: ContractWarningCodes.namesOtherTools,
      field: 'description',
      message: `the description names other tools: ${[...new Set(named)].slice(0, 8).join(', ')}`,
    });
  parameterWarnings(contract.inputSchema, 'inputSchema', 0, out);
  const before = ctx.previous?.annotations ?? {};
  const after = contract.annotations ?? {};
  if (before.readOnlyHint === true && after.readOnlyHint !== true)
    out.push({
      code: ContractWarningCodes.readOnlyDropped,
      field: 'annotations',
      message: 'readOnlyHint was dropped: the tool no longer says it only reads',
    });
  if (before.destructiveHint !== true && after.destructiveHint === true)
    out.push({
      code: ContractWarningCodes.destructiveAdded,
      field: 'annotations',
      message: 'destructiveHint was added: the tool now says it may destroy data',
    });
  const confusable = confusableName(tool.name, ctx.otherTools ?? []);
  if (confusable !== undefined)
    out.push({ code: ContractWarningCodes.confusableName, field: 'name', message: confusable });
  return out.slice(0, 50);
}

function confusableName(name: string, others: readonly string[]): string | undefined {
  const skeleton = nameSkeleton(name);
  const lookalike = others.find((o) => o !== name && nameSkeleton(o) === skeleton);
  if (lookalike !== undefined) return `the name ${JSON.stringify(name)} looks like ${JSON.stringify(lookalike)}`;
  // eslint-disable-next-line no-control-regex
  if (/[^\x00-\x7F]/.test(name))
    return `the name ${JSON.stringify(name)} has characters outside ASCII (look-alike letters of other scripts)`;
  return undefined;
}

function parameterWarnings(schema: unknown, path: string, depth: number, out: ContractWarning[]): void {
  if (!isPlainObject(schema) || depth > 8 || out.length > 40) return;
  const props = isPlainObject(schema.properties) ? schema.properties : {};
  for (const [name, child] of Object.entries(props)) {
    const field = `${path}/${name}`;
    if (name.length > 64 || /\s/.test(name) || instructionLike(name.replace(/[_-]+/g, ' '))) {
      out.push({
        code: ContractWarningCodes.instructionInParameter,
        field,
        message: `the parameter name ${JSON.stringify(name.slice(0, 80))} reads as an instruction`,
      });
    }
    const why = hidden(name);
    if (why !== undefined)
      out.push({ code: ContractWarningCodes.hiddenText, field, message: `the parameter name holds ${why}` });
    if (isPlainObject(child)) {
      const values = [
        ...(Array.isArray(child.enum) ? child.enum : []),
        ...(child.default !== undefined ? [child.default] : []),
        ...(child.const !== undefined ? [child.const] : []),
      ];
      for (const v of values) {
        if (typeof v !== 'string') continue;
        if (v.length > 80 || instructionLike(v) || hidden(v) !== undefined) {
          out.push({
            code: ContractWarningCodes.instructionInParameter,
            field,
            message: `a value of ${name} (enum, default or const) reads as an instruction or hides text: ${JSON.stringify(v.slice(0, 80))}`,
          });
          break;
        }
      }
      if (typeof child.description === 'string') {
        const hiddenWhy = hidden(child.description);
        if (hiddenWhy !== undefined)
          out.push({
            code: ContractWarningCodes.hiddenText,
            field,
            message: `the description of ${name} holds ${hiddenWhy}`,
          });
        else if (instructionLike(child.description))
          out.push({
            code: ContractWarningCodes.instructsModel,
            field,
            message: `the description of ${name} tells the model what to do`,
          });
      }
      parameterWarnings(child, field, depth + 1, out);
      if (isPlainObject(child.items)) parameterWarnings(child.items, `${field}/[]`, depth + 1, out);
    }
  }
}
