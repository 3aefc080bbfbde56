/** What a call needs to reach a server: where it is and the headers that authenticate it. */
export interface ServerEntry {
  url: string;
  transport?: 'http' | 'sse';
  headers: Record<string, string>;
  /** An oauth server: the token it holds (its hash only) and when it expires (epoch ms). */
  oauth?: { tokenHash?: string; expiresAt?: number };
}
