import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Controller, Get, Module, Param } from '@nestjs/common';
import { createHttpApp, listen } from './http-app';
import { enableProcessMetrics, metricsRegistry } from './metrics';
import { freePort } from './net';

const root = join(__dirname, '..', '..', '..');
const histogramSeries = /_(bucket|count|sum)$/;

/** Metric names the registry exposes (histograms' series included), with the process metrics. */
function exposedNames(): Set<string> {
  enableProcessMetrics();
  const names = new Set<string>(['up']);
  for (const m of metricsRegistry.getMetricsAsArray()) names.add(m.name);
  return names;
}

/** Metric names a PromQL text names (series suffixes stripped when the base is a histogram). */
function namesIn(text: string, known: Set<string>): string[] {
  const found = text.match(/\b(tracehouse_[a-z0-9_]+|process_[a-z0-9_]+|nodejs_[a-z0-9_]+|up)\b/g) ?? [];
  return [...new Set(found)].map((n) => (!known.has(n) && histogramSeries.test(n) && known.has(n.replace(histogramSeries, '')) ? n.replace(histogramSeries, '') : n));
}

describe('the metrics catalogue', () => {
  it('docs/metrics.md lists every metric of the registry with its type and labels, and nothing else', () => {
    const doc = readFileSync(join(root, 'docs', 'metrics.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `(tracehouse_[a-z0-9_]+)` \| (\w+) \| ([^|]*) \|/gm)].map((m) => ({
      name: m[1],
      type: m[2],
      labels: [...m[3].matchAll(/`(\w+)`/g)].map((l) => l[1]),
    }));
    const own = metricsRegistry.getMetricsAsArray().filter((m) => m.name.startsWith('tracehouse_'));
    expect(rows.map((r) => r.name).sort()).toEqual(own.map((m) => m.name).sort());
    for (const m of own) {
      const row = rows.find((r) => r.name === m.name)!;
      expect({ name: m.name, type: row.type, labels: row.labels }).toEqual({
        name: m.name,
        type: m.constructor.name.toLowerCase(),
        labels: (m as unknown as { labelNames: string[] }).labelNames,
      });
    }
  });

  it('the alert rules and every dashboard name only metrics the registry exposes', () => {
    const known = exposedNames();
    const sources: [string, string][] = [['deploy/prometheus/alerts.yml', readFileSync(join(root, 'deploy', 'prometheus', 'alerts.yml'), 'utf8')]];
    const dashboards = readdirSync(join(root, 'deploy', 'grafana')).filter((f) => f.endsWith('.json'));
    expect(dashboards).toEqual(expect.arrayContaining(['tracehouse-overview.json', ...['gateway', 'ingest', 'query', 'control-plane', 'export-worker', 'audit', 'agent-server'].map((s) => `tracehouse-${s}.json`)]));
    for (const f of dashboards) {
      const dash = JSON.parse(readFileSync(join(root, 'deploy', 'grafana', f), 'utf8')) as { panels: { targets: { expr: string }[] }[] };
      expect(dash.panels.length).toBeGreaterThan(0);
      sources.push([f, dash.panels.flatMap((p) => p.targets.map((t) => t.expr)).join('\n')]);
    }
    for (const [file, text] of sources) {
      const names = namesIn(text, known);
      expect(names.length).toBeGreaterThan(0);
      expect({ file, unknown: names.filter((n) => !known.has(n)) }).toEqual({ file, unknown: [] });
    }
  });

  it('promtool accepts the alert rules', () => {
    const out = execFileSync('promtool', ['check', 'rules', join(root, 'deploy', 'prometheus', 'alerts.yml')], { encoding: 'utf8' });
    expect(out).toMatch(/SUCCESS: \d+ rules found/);
  });
});

@Controller('things')
class ThingsController {
  @Get(':thing_id')
  get(@Param('thing_id') id: string): { id: string } {
    return { id };
  }
}
@Module({ controllers: [ThingsController] })
class ThingsModule {}

const sample = (text: string, name: string, labels: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

describe('/metrics on an app', () => {
  it('counts requests by route template (never the raw path) and serves the text on the public port', async () => {
    const app = await createHttpApp(ThingsModule, { service: 'test', logLevel: 'error', maxBodyBytes: 1024 * 1024 });
    const running = await listen(app, '127.0.0.1', 0);
    try {
      for (let i = 0; i < 3; i++) expect((await fetch(`${running.url}/things/id-${i}`)).status).toBe(200);
      expect((await fetch(`${running.url}/nowhere/at/all`)).status).toBe(404);
      const r = await fetch(`${running.url}/metrics`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toContain('text/plain');
      const text = await r.text();
      expect(sample(text, 'tracehouse_http_requests_total', 'route="/things/{thing_id}",method="GET",status_class="2xx"')).toBeGreaterThanOrEqual(3);
      expect(sample(text, 'tracehouse_http_requests_total', 'route="unmatched",method="GET",status_class="4xx"')).toBeGreaterThanOrEqual(1);
      expect(text).not.toContain('id-1');
      expect(text).toContain('process_cpu_seconds_total');
      expect(text).toMatch(/tracehouse_http_request_duration_seconds_bucket\{le="0.005",route="\/things\/\{thing_id\}"/);
    } finally {
      await running.close();
    }
  });

  it('asks for METRICS_TOKEN on the public port when one is set', async () => {
    const token = 'a-metrics-token-0123456789';
    const app = await createHttpApp(ThingsModule, { service: 'test', logLevel: 'error', maxBodyBytes: 1024 * 1024, metrics: { METRICS_TOKEN: token } });
    const running = await listen(app, '127.0.0.1', 0);
    try {
      expect((await fetch(`${running.url}/metrics`)).status).toBe(401);
      expect((await fetch(`${running.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789xx' } })).status).toBe(401);
      const ok = await fetch(`${running.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('tracehouse_http_requests_total');
    } finally {
      await running.close();
    }
  });

  it('serves /metrics on METRICS_PORT only when it is set, and closes that server with the app', async () => {
    const metricsPort = await freePort();
    const app = await createHttpApp(ThingsModule, { service: 'test', logLevel: 'error', maxBodyBytes: 1024 * 1024, metrics: { METRICS_PORT: metricsPort, HOST: '127.0.0.1' } });
    const running = await listen(app, '127.0.0.1', 0);
    try {
      expect((await fetch(`${running.url}/metrics`)).status).toBe(404);
      const r = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(r.status).toBe(200);
      expect(await r.text()).toContain('tracehouse_http_requests_total');
      expect((await fetch(`http://127.0.0.1:${metricsPort}/other`)).status).toBe(404);
    } finally {
      await running.close();
    }
    await expect(fetch(`http://127.0.0.1:${metricsPort}/metrics`)).rejects.toThrow();
  });
});
