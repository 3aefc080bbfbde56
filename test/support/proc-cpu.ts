import { readFileSync } from 'node:fs';

/** CPU milliseconds a process has used (utime + stime from /proc, in clock ticks of 10 ms; 0 elsewhere or for no process). */
export function processCpuMs(pid: number | undefined): number {
  return pid === undefined ? 0 : statCpuMs(`/proc/${pid}/stat`);
}

/**
 * CPU milliseconds of a process's main thread alone (/proc, its task of the same id; 0 where
 * there is none): the JavaScript and the system calls it makes. The rest of {@link processCpuMs}
 * is its helper threads: V8's garbage collector and compiler, libuv's pool.
 */
export function mainThreadCpuMs(pid: number | undefined): number {
  return pid === undefined ? 0 : statCpuMs(`/proc/${pid}/task/${pid}/stat`);
}

/** utime + stime of a /proc `stat` file (a process's or a thread's), in ms (clock ticks of 10 ms); 0 when it cannot be read. */
export function statCpuMs(path: string): number {
  try {
    const fields = readFileSync(path, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}
