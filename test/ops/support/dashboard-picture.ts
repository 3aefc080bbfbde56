/**
 * Draws dashboard panels (series from Prometheus's query_range answers) as SVG line charts in a
 * page laid out like the Grafana dashboard (three panels a row), and screenshots it with Chromium
 * into a PNG. Used where Grafana itself cannot run (no Docker engine): the data are real, the
 * drawing is ours.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export interface PanelSeries {
  title: string;
  unit: string;
  series: Array<{ label: string; points: Array<[number, number]> }>;
}

const COLORS = ['#73bf69', '#f2cc0c', '#5794f2', '#ff780a', '#f2495c', '#b877d9', '#8ab8ff', '#ffb357'];
const W = 420;
const H = 210;
const PAD = { l: 48, r: 10, t: 10, b: 22 };

function escape(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c);
}

function fmt(v: number, unit: string): string {
  const n = Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
  return unit === 'ms' ? `${n} ms` : unit === 'reqps' ? `${n}/s` : n;
}

function chart(p: PanelSeries): string {
  const all = p.series.flatMap((s) => s.points);
  if (all.length === 0)
    return `<svg width="${W}" height="${H}"><text x="${W / 2}" y="${H / 2}" fill="#888" text-anchor="middle">No data</text></svg>`;
  const t0 = Math.min(...all.map(([t]) => t));
  const t1 = Math.max(...all.map(([t]) => t), t0 + 1);
  const vmax = Math.max(...all.map(([, v]) => v), 0) * 1.1 || 1;
  const x = (t: number): number => PAD.l + ((t - t0) / (t1 - t0)) * (W - PAD.l - PAD.r);
  const y = (v: number): number => H - PAD.b - (v / vmax) * (H - PAD.t - PAD.b);
  const grid = [0, 0.25, 0.5, 0.75, 1]
    .map((f) => {
      const v = vmax * f;
      return `<line x1="${PAD.l}" x2="${W - PAD.r}" y1="${y(v)}" y2="${y(v)}" stroke="#2c3235"/><text x="${PAD.l - 4}" y="${y(v) + 4}" fill="#9fa7b3" font-size="10" text-anchor="end">${escape(fmt(v, p.unit))}</text>`;
    })
    .join('');
  const secs = Math.round((t1 - t0) / 1000);
  const axis = `<text x="${PAD.l}" y="${H - 6}" fill="#9fa7b3" font-size="10">${new Date(t0).toISOString().slice(11, 19)}</text><text x="${W - PAD.r}" y="${H - 6}" fill="#9fa7b3" font-size="10" text-anchor="end">+${secs} s</text>`;
  const lines = p.series
    .map(
      (s, i) =>
        `<polyline fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="1.6" points="${s.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}"/>`,
    )
    .join('');
  return `<svg width="${W}" height="${H}">${grid}${axis}${lines}</svg>`;
}

export async function renderDashboardPng(
  panels: PanelSeries[],
  out: string,
  chromiumPath: string,
  caption: string,
): Promise<void> {
  const cells = panels
    .map((p) => {
      const legend = p.series
        .slice(0, 6)
        .map(
          (s, i) => `<span><i style="background:${COLORS[i % COLORS.length]}"></i>${escape(s.label || p.title)}</span>`,
        )
        .join('');
      return `<div class="panel"><div class="title">${escape(p.title)}</div>${chart(p)}<div class="legend">${legend}</div></div>`;
    })
    .join('');
  const html = `<!doctype html><html><head><meta charset="utf-8"><style>
    body{margin:0;background:#111217;color:#ccccdc;font:12px Inter,Helvetica,Arial,sans-serif}
    h1{font-size:15px;font-weight:500;margin:10px 12px}
    .grid{display:grid;grid-template-columns:repeat(3,${W + 16}px);gap:8px;padding:0 12px 12px}
    .panel{background:#181b1f;border:1px solid #2c3235;border-radius:2px;padding:6px 8px}
    .title{font-weight:500;margin-bottom:4px}
    .legend{display:flex;flex-wrap:wrap;gap:10px;font-size:11px;margin-top:2px;min-height:14px}
    .legend i{display:inline-block;width:14px;height:3px;margin-right:4px;vertical-align:middle}
  </style></head><body><h1>${escape(caption)}</h1><div class="grid">${cells}</div></body></html>`;
  const userDataDir = mkdtempSync(join(tmpdir(), 'mcpx-dash-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 3 * (W + 24) + 24, height: 200 },
  });
  try {
    const page = await context.newPage();
    await page.setContent(html);
    await page.screenshot({ path: out, fullPage: true });
  } finally {
    await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
  }
}
