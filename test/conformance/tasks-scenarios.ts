/**
 * The conformance suite's tasks scenarios (SEP-2663, the 2026-07-28 tasks extension; extension
 * scenarios, run without a spec version) and what each gives through the agent endpoint's
 * per-server face in front of the extension's fixture (`test/servers/conformance-tasks-upstream.ts`):
 * a pass, or exactly the failing checks listed, with why. The suite has no tasks client scenarios.
 * One list for the gate (`test/endpoint/endpoint-tasks-conformance.test.ts`) and the bench
 * (`pnpm bench conformance tasks`, bench/conformance-tasks.ts).
 */
export const TASK_SCENARIOS: ReadonlyArray<{ scenario: string; failing?: string[]; why?: string; skipped?: true }> = [
  { scenario: 'tasks-capability-negotiation' },
  { scenario: 'tasks-wire-fields' },
  { scenario: 'tasks-request-headers' },
  { scenario: 'tasks-request-state-removal' },
  { scenario: 'tasks-dispatch-and-envelope' },
  { scenario: 'tasks-lifecycle' },
  { scenario: 'tasks-mrtr-input' },
  {
    scenario: 'tasks-mrtr-composition',
    failing: ['sep-2663-mrtr-synchronous-before-task-creation'],
    why: 'an input round before the task is created goes to the account owner as the call’s input request, not back to the client that asked for the task',
  },
  {
    scenario: 'tasks-required-task-error',
    failing: ['sep-2663-server-returns-missing-capability-when-required'],
    why: 'by design: a client that did not declare tasks calling a required task tool is answered as a runtime is (the result within the call bound, else a result naming the task), never refused',
  },
  // The suite skips it itself (pending its rewrite onto the listen stream): no check scored.
  { scenario: 'tasks-status-notifications', skipped: true },
];
