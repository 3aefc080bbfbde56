import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { createServer, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { listenOnLoopback } from './loopback.js';

/**
 * An https server on loopback that terminates TLS in front of a plain-http service, the way an
 * operator's TLS front stands before the registry: with it the registry has an https public URL
 * (what an OAuth client ID metadata document needs) while it listens on plain http itself. Its
 * certificate is self-signed for 127.0.0.1, made when it starts; clients trust it through `ca`.
 */
export interface TlsFront {
  /** `https://127.0.0.1:PORT` (no path). */
  origin: string;
  /** The certificate (PEM): the only trust anchor a client needs for `origin`. */
  ca: string;
  /** Where requests go (`http://host:port`); set once the service behind it listens. Unset: 502. */
  target: string | undefined;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A fresh self-signed P-256 certificate for 127.0.0.1, valid two days (needs the openssl CLI). */
async function selfSignedCertificate(): Promise<{ key: string; cert: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'tls-front-'));
  try {
    const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
    await promisify(execFile)('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ]);
    return { key: await readFile(key, 'utf8'), cert: await readFile(cert, 'utf8') };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function startTlsFront(): Promise<TlsFront> {
  const { key, cert } = await selfSignedCertificate();
  const front = {} as TlsFront;
  const server = createServer({ key, cert }, (req, res) => {
    if (front.target === undefined) {
      res.writeHead(502).end();
      return;
    }
    const upstream = httpRequest(
      new URL(req.url ?? '/', front.target),
      { method: req.method, headers: { ...req.headers, 'x-forwarded-proto': 'https' } },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  const { port, close } = await listenOnLoopback(server, { tls: true });
  return Object.assign(front, {
    origin: `https://127.0.0.1:${port}`,
    ca: cert,
    target: undefined,
    close,
    [Symbol.asyncDispose]: close,
  });
}

export interface HttpsResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * A GET over https that trusts `ca` only (global fetch has no per-request trust anchors), bounded
 * by `maxBytes` and `timeoutMs`; redirects are not followed.
 */
export function httpsGet(
  url: string,
  opts: { ca?: string; headers?: Record<string, string>; maxBytes?: number; timeoutMs?: number } = {},
): Promise<HttpsResponse> {
  const maxBytes = opts.maxBytes ?? 1024 * 1024;
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method: 'GET',
        headers: opts.headers ?? {},
        ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
        timeout: opts.timeoutMs ?? 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            req.destroy(new Error(`the response of ${new URL(url).pathname} is larger than ${maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${new URL(url).origin} in time`)));
    req.on('error', reject);
    req.end();
  });
}
