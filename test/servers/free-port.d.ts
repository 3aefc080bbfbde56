/**
 * A TCP port that was free on `host` a moment ago, for children that need a port up front (listen
 * on 0 when you can bind yourself). Inside a test worker it comes from the worker's own block;
 * elsewhere (benchmarks, scripts) it is one the kernel picked, which another process may take first.
 */
export declare function freePort(host?: string): Promise<number>;
