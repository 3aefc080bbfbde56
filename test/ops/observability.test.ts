/**
 * The observability stack, proven with the real programs installed here: a
 * real Prometheus (Debian's package) scrapes every service's /metrics on its internal port, and
 * answers every query of the provisioned Grafana dashboard with data from real traffic (calls ok
 * and failing, discoveries, projections, a quota rejection); the dashboard's metric names are
 * those the services export. With MCPX_DASHBOARD_PNG=<path> it also draws the panels from
 * Prometheus's answers (query_range over the run) into a PNG with Chromium — the README's picture.
 * The run also leaves an approval and a server's question waiting for a person, and calls through
 * the agent MCP endpoint, so the waiting and endpoint panels have data; the projector's lag is a
 * panel whose healthy value is zero (its own test checks both states are read).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoTool, errorTool, freePort, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { startInputMcpServer, type InputMcpServer } from '../servers/input-mcp-server.js';
import { which } from './support/infra.js';
import { renderDashboardPng, type PanelSeries } from './support/dashboard-picture.js';
import { ROOT, Stack, until } from './support/stack.js';

const PROMETHEUS = which('prometheus');
if (PROMETHEUS === undefined)
  console.warn('observability: skipped, no prometheus binary (apt-get install prometheus; .ci/run installs it)');

interface Panel {
  title: string;
  fieldConfig: { defaults: { unit: string } };
  targets: Array<{ expr: string; legendFormat: string }>;
}
const dashboard = JSON.parse(
  readFileSync(join(ROOT, 'deploy', 'observability', 'grafana', 'dashboards', 'mcpx.json'), 'utf8'),
) as { panels: Panel[] };
const RATE_WINDOW = '10s';
const concrete = (expr: string): string => expr.replaceAll('$__rate_interval', RATE_WINDOW);
/** Panels whose healthy value is zero all along: their series must be there, a value above zero need not. */
const ZERO_IS_HEALTHY = new Set(['max by (state) (mcpx_consumer_backlog{consumer="projector"})']);

type PromResult = Array<{ metric: Record<string, string>; value?: [number, string]; values?: Array<[number, string]> }>;

describe.skipIf(PROMETHEUS === undefined)(
  'observability: a real Prometheus scrapes every service and answers the dashboard',
  () => {
    let stack: Stack;
    let upstream: TestMcpServer;
    let legacy: TestMcpServer;
    let asking: InputMcpServer;
    let mcp: Client | undefined;
    let prometheus: ChildProcess;
    let promUrl = '';
    let dir = '';
    const promLogs: string[] = [];
    let trafficFrom = 0;
    let trafficTo = 0;

    async function query(expr: string, time: number): Promise<PromResult> {
      const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}&time=${time / 1000}`);
      const body = (await res.json()) as { status: string; error?: string; data: { result: PromResult } };
      if (body.status !== 'success') throw new Error(`${expr}: ${body.error ?? body.status}`);
      return body.data.result;
    }

    async function queryRange(expr: string): Promise<PromResult> {
      const res = await fetch(
        `${promUrl}/api/v1/query_range?query=${encodeURIComponent(expr)}&start=${trafficFrom / 1000}&end=${(trafficTo + 2_000) / 1000}&step=1`,
      );
      const body = (await res.json()) as { status: string; error?: string; data: { result: PromResult } };
      if (body.status !== 'success') throw new Error(`${expr}: ${body.error ?? body.status}`);
      return body.data.result;
    }

    beforeAll(async () => {
      [stack, upstream, legacy, asking] = await Promise.all([
        Stack.start({ endpoints: 1, env: { QUOTA_AGENTS_PER_ACCOUNT: '3' } }),
        startTestMcpServer({ era: 'modern', tools: [echoTool(), errorTool()] }),
        startTestMcpServer({ era: 'legacy', tools: [echoTool()] }),
        startInputMcpServer(),
      ]);
      dir = mkdtempSync(join(tmpdir(), 'mcpx-prom-'));
      const job = (name: string): string => {
        const svc = stack.of(name as 'registry')[0]!;
        return `  - job_name: ${name}\n    static_configs: [{ targets: ["${new URL(svc.internalUrl).host}"] }]\n`;
      };
      // The compose file's scrape jobs (deploy/observability/prometheus.yml), aimed at loopback.
      writeFileSync(
        join(dir, 'prometheus.yml'),
        `global:\n  scrape_interval: 1s\nscrape_configs:\n${job('registry')}${job('projector')}${job('proxy')}${job('endpoint')}`,
      );
      const port = await freePort();
      promUrl = `http://127.0.0.1:${port}`;
      prometheus = spawn(
        PROMETHEUS!,
        [
          `--config.file=${join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
        ],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      prometheus.stderr?.on('data', (d: Buffer) => promLogs.push(d.toString('utf8')));
      await until(
        async () => ((await fetch(`${promUrl}/-/ready`).catch(() => undefined))?.ok ? true : undefined),
        60_000,
        `prometheus ready:\n${promLogs.join('')}`,
      );

      // Real traffic: a server, agents, calls that succeed and fail, discoveries, a quota rejection.
      trafficFrom = Date.now();
      await stack.setServer('up', upstream.url);
      await stack.setServer('old', legacy.url);
      await stack.setServer('ask', asking.url);
      await stack.api.act('SetToolPermission', { server: 'ask', tool: 'summarize', permission: 'always_ask' });
      const agent = await stack.createAgent('agent', ['up', 'old', 'ask'], 4);
      await stack.createAgent('second', ['up'], 2);
      await stack.createAgent('third', ['up'], 2);
      // Left waiting for a person all run: an approval of an always_ask call and a server's question.
      expect((await stack.callError(agent, 'waits-approval', 'ask__summarize', { text: 'x' })).code).toBe(
        'approval_required',
      );
      expect((await stack.callError(agent, 'waits-input', 'ask__deploy', { env: 'prod' })).code).toBe('input_required');
      // An MCP client on the agent's endpoint (the SDK v2 client with an endpoint token).
      const { token } = await stack.api.act<{ token: string }>('CreateAgentToken', { agent });
      mcp = new Client({ name: 'observability', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await mcp.connect(
        new StreamableHTTPClientTransport(new URL(`${stack.of('endpoint')[0]!.url}/v1/agents/${agent}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      const end = Date.now() + 20_000;
      for (let i = 0; Date.now() < end; i++) {
        await stack.call(agent, `run-${Math.floor(i / 10)}`, 'up__echo', { text: `m${i}` });
        if (i % 5 === 0) await stack.call(agent, `legacy-run-${i}`, 'old__echo', { text: `l${i}` });
        if (i % 4 === 0)
          expect((await mcp.callTool({ name: 'up__echo', arguments: { text: `e${i}` } })).isError).toBeFalsy();
        if (i % 9 === 0) await mcp.listTools();
        if (i % 7 === 0) await stack.callError(agent, `run-${i}`, 'up__fail', {});
        if (i % 11 === 0) await stack.callError(agent, `run-${i}`, 'up__echo', { text: 5 });
        if (i % 15 === 0) {
          // A contract change: a discovery that changes tools, a projection onto the agents.
          upstream.setTools(
            i % 30 === 0
              ? [
                  echoTool(),
                  errorTool(),
                  { name: `extra_${i}`, description: 'changes', handler: () => ({ content: [] }) },
                ]
              : [echoTool(), errorTool()],
          );
          await stack.api.act('RefreshMcpServer', { name: 'up' });
        }
        if (i % 20 === 0)
          await expect(
            stack.api.act('CreateAgent', { name: 'fourth', definition: { mcpServers: [] } }),
          ).rejects.toMatchObject({ code: 'quota_exceeded' });
        await new Promise((r) => setTimeout(r, 30));
      }
      trafficTo = Date.now();
      // Two more scrapes after the last call.
      await new Promise((r) => setTimeout(r, 2_500));
    }, 180_000);

    afterAll(async () => {
      prometheus?.kill('SIGTERM');
      await mcp?.close().catch(() => undefined);
      await stack?.stop();
      await Promise.all([upstream?.close(), legacy?.close(), asking?.close()]);
      if (dir !== '') rmSync(dir, { recursive: true, force: true });
    });

    it('scrapes every service: up == 1 for registry, projector, proxy and the agent MCP endpoint', async () => {
      const up = await until(
        async () => {
          const r = await query('up', Date.now());
          return r.length === 4 && r.every((x) => x.value?.[1] === '1') ? r : undefined;
        },
        20_000,
        'four targets up',
      );
      expect(up.map((x) => x.metric['job']).sort()).toEqual(['endpoint', 'projector', 'proxy', 'registry']);
    });

    it("projector lag and events published: the projector consumer's backlog in both states, and agent-tools-changed stored during the run", async () => {
      // mcpx_consumer_backlog is read from JetStream at each scrape; every instance reports the same consumer.
      const lag = await queryRange('mcpx_consumer_backlog{consumer="projector"}');
      expect(lag.map((x) => `${x.metric['job']}/${x.metric['state']}`).sort()).toEqual([
        'projector/ack_pending',
        'projector/pending',
      ]);
      for (const series of lag) {
        const values = (series.values ?? []).map(([, v]) => Number(v));
        // NaN is the gauge's "JetStream did not answer this scrape" (possible on a loaded box); a read is never negative.
        const read = values.filter((v) => Number.isFinite(v));
        expect(read.length, `lag ${series.metric['state']}: ${values.join(',')}`).toBeGreaterThan(5);
        expect(
          read.every((v) => v >= 0),
          `lag ${series.metric['state']}: ${values.join(',')}`,
        ).toBe(true);
      }
      const window = `${Math.ceil((trafficTo - trafficFrom) / 1000) + 5}s`;
      const published = await query(
        `sum by (outcome) (increase(mcpx_projector_events_published_total[${window}]))`,
        trafficTo + 1_000,
      );
      const stored = Number(published.find((x) => x.metric['outcome'] === 'stored')?.value?.[1] ?? 0);
      expect(stored).toBeGreaterThan(0);
    });

    it.each(dashboard.panels.flatMap((p) => p.targets.map((t) => [p.title, t.expr] as const)))(
      '%s: %s answers with data from the run',
      async (_title, expr) => {
        // Over the run (one point a second): some series has a value above zero somewhere in it.
        const result = await queryRange(concrete(expr));
        expect(result.length, `no series for ${expr}`).toBeGreaterThan(0);
        const values = result.flatMap((r) => (r.values ?? []).map(([, v]) => Number(v)));
        if (ZERO_IS_HEALTHY.has(expr))
          expect(
            values.some((v) => Number.isFinite(v) && v >= 0),
            `no value read for ${expr}`,
          ).toBe(true);
        else
          expect(
            values.some((v) => Number.isFinite(v) && v > 0),
            `no value above zero for ${expr}`,
          ).toBe(true);
      },
    );

    it("call latency p50 and p99 per server, by tool and outcome; errors by code; labels only from the registry's documents; the waiting gauges", async () => {
      const at = trafficTo + 1_000;
      const window = `${Math.ceil((trafficTo - trafficFrom) / 1000) + 5}s`;
      for (const q of ['0.5', '0.99']) {
        const r = await query(
          `histogram_quantile(${q}, sum by (le, mcpx_server) (rate(mcpx_call_duration_ms_bucket{outcome="ok"}[${window}])))`,
          at,
        );
        const byServer = Object.fromEntries(r.map((x) => [x.metric['mcpx_server'], Number(x.value?.[1])]));
        expect(Object.keys(byServer).sort(), `p${q} by server`).toEqual(['old', 'up']);
        for (const v of Object.values(byServer)) expect(v).toBeGreaterThan(0);
      }
      // Outcomes: ok, refused (invalid arguments: nothing ran), error (the server's isError).
      const outcomes = await query(
        `sum by (mcpx_server, gen_ai_tool_name, outcome) (increase(mcpx_call_duration_ms_count[${window}]))`,
        at,
      );
      const seen = new Set(
        outcomes
          .filter((x) => Number(x.value?.[1]) > 0)
          .map((x) => `${x.metric['mcpx_server']}/${x.metric['gen_ai_tool_name']}/${x.metric['outcome']}`),
      );
      for (const s of ['up/echo/ok', 'old/echo/ok', 'up/echo/refused', 'up/fail/error'])
        expect([...seen], s).toContain(s);
      // The tool label is the server's tool name from its document, never what the caller sent.
      expect(outcomes.every((x) => !String(x.metric['gen_ai_tool_name']).includes('__'))).toBe(true);
      const errors = await query(`sum by (code) (increase(mcpx_call_errors_total[${window}]))`, at);
      expect(errors.map((x) => x.metric['code']).sort()).toEqual([
        'approval_required',
        'input_required',
        'invalid_arguments',
        'server_error',
      ]);
      // The waiting gauges (read from Redis at each scrape): the run left one approval and one question.
      const proxyMetrics = await (await fetch(`${stack.of('proxy')[0]!.internalUrl}/metrics`)).text();
      expect(proxyMetrics).toMatch(/^mcpx_approvals_waiting(\{[^}]*\})? 1$/m);
      expect(proxyMetrics).toMatch(/^mcpx_input_requests_waiting(\{[^}]*\})? 1$/m);
    });

    it('the dashboard names only metrics the services export (and the queries parse); a misspelt one has no data', async () => {
      const exported = new Set<string>();
      for (const svc of stack.services) {
        const text = await (await fetch(`${svc.internalUrl}/metrics`)).text();
        for (const m of text.matchAll(/^# TYPE (\S+) /gm)) if (m[1] !== undefined) exported.add(m[1]);
      }
      // Metric names only (labels such as mcpx_server in `by (…)` and `{…}` are not metrics).
      const used = new Set(
        dashboard.panels.flatMap((p) =>
          p.targets.flatMap((t) =>
            [
              ...t.expr
                .replace(/by \([^)]*\)/g, '')
                .replace(/\{[^}]*\}/g, '')
                .matchAll(/\b(mcpx_[a-z0-9_]+)/g),
            ].map((m) => (m[1] ?? '').replace(/_(bucket|sum|count)$/, '')),
          ),
        ),
      );
      expect(used.size).toBeGreaterThan(8);
      for (const name of used) expect(exported, `dashboard metric ${name}`).toContain(name);
      // The check above is not vacuous: Prometheus has nothing under a name no service exports.
      expect(await query('sum(rate(mcpx_proxy_callz_total[10s]))', trafficTo)).toEqual([]);
    });

    it('draws the panels from Prometheus (query_range over the run) when MCPX_DASHBOARD_PNG is set', async () => {
      const out = process.env.MCPX_DASHBOARD_PNG;
      const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
      if (out === undefined || !existsSync(chromium)) return;
      const panels: PanelSeries[] = [];
      for (const p of dashboard.panels) {
        const series: PanelSeries['series'] = [];
        for (const t of p.targets) {
          for (const r of await queryRange(concrete(t.expr))) {
            const label = t.legendFormat.replace(/\{\{(\w+)\}\}/g, (_, k: string) => r.metric[k] ?? '');
            series.push({
              label,
              points: (r.values ?? [])
                .map(([ts, v]) => [ts * 1000, Number(v)] as [number, number])
                .filter(([, v]) => Number.isFinite(v)),
            });
          }
        }
        panels.push({ title: p.title, unit: p.fieldConfig.defaults.unit, series });
      }
      await renderDashboardPng(
        panels,
        out,
        chromium,
        `mcpx — a real run on this machine, ${new Date(trafficFrom).toISOString().slice(0, 16).replace('T', ' ')} UTC (Prometheus ${RATE_WINDOW} rate windows)`,
      );
      expect(existsSync(out)).toBe(true);
    }, 60_000);
  },
);
