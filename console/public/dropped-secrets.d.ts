/** See dropped-secrets.js. */
export function droppedSecretsText(dropped: { headers?: unknown; oauth?: unknown } | undefined | null): string;
