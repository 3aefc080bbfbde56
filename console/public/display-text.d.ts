/** See display-text.js. */
export function displayText(text: unknown): string;
