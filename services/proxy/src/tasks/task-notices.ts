/**
 * The proxies' Postgres channel of task notices (docs/tasks.md#the-broker), hints only (the rows
 * are the truth): `freed` (an instance let its leases go: the others look for due tasks now) and
 * `ended <task>` (a task ended on an instance that did not create it: its creator wakes the call
 * waiting for it).
 */
export const TASKS_CHANNEL = 'mcpx_tasks';
export const TaskNotices = { freed: 'freed', ended: 'ended ' } as const;
