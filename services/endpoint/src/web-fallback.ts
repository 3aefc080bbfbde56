import type { IncomingMessage, ServerResponse } from 'node:http';

/** A Node request's headers as web `Headers` (pseudo-headers left out, repeated ones appended). */
export function webHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(':')) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else headers.set(name, value);
  }
  return headers;
}

/**
 * Serves a request whose body was already read (by the bounded reader, once its headers were
 * admitted; undefined when it has none) through the web-standard handler, as the SDK's node
 * adapter does for one it reads itself: the same
 * `Request` (URL from Host, the headers, the body, a signal that fires when the client goes away)
 * and the `Response` written back with its status, headers and streamed body (flow-controlled).
 */
export async function serveWithBody(
  req: IncomingMessage,
  res: ServerResponse,
  body: string | undefined,
  handle: (request: Request) => Promise<Response>,
  onError: (err: Error) => void,
): Promise<void> {
  let finished = false;
  const abort = new AbortController();
  res.on('close', () => {
    if (!finished) abort.abort();
  });
  const headers = webHeaders(req);
  let response: Response;
  try {
    const host = req.headers.host ?? 'localhost';
    response = await handle(
      new Request(`http://${host}${req.url ?? '/'}`, {
        method: req.method ?? 'POST',
        headers,
        body,
        signal: abort.signal,
      }),
    );
  } catch (err) {
    onError(err as Error);
    response = Response.json(
      { jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null },
      { status: 500 },
    );
  }
  const out: Record<string, string> = {};
  for (const [name, value] of response.headers) out[name] = value;
  res.writeHead(response.status, out);
  if (response.body === null) {
    finished = true;
    res.end();
    return;
  }
  let drained: (() => void) | undefined;
  res.on('drain', () => {
    drained?.();
    drained = undefined;
  });
  const closed = new Promise<void>((resolve) =>
    abort.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  try {
    for await (const chunk of response.body) {
      if (abort.signal.aborted) break;
      if (!res.write(chunk)) await Promise.race([new Promise<void>((resolve) => (drained = resolve)), closed]);
    }
  } catch {
    // The stream ended badly (the client went away): nothing more to write.
  }
  finished = true;
  res.end();
}
