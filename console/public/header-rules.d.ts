/** See header-rules.js. */
export const MAX_HEADERS: number;
export const MAX_HEADER_VALUE_BYTES: number;
export const HEADER_NAME_RE: RegExp;
export const RESERVED_HEADERS: ReadonlySet<string>;
