import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { composeEnvironment, deploySources, deployedEnvironment, interpolateCompose, k8sEnvironment, portProblems, settingsProblems } from './deploy-settings';

describe('interpolateCompose', () => {
  it.each([
    ['${A:-x}', {}, 'x'],
    ['${A:-x}', { A: '' }, 'x'],
    ['${A-x}', { A: '' }, ''],
    ['${A-x}', {}, 'x'],
    ['${A:-x}', { A: 'set' }, 'set'],
    ['${A}', {}, ''],
    ['$A/b', { A: 'a' }, 'a/b'],
    ['p$$q', {}, 'p$q'],
    ['pg://u:${P:-secret}@h:5432/db', {}, 'pg://u:secret@h:5432/db'],
  ] as const)('%s with %j is %s', (value, shell, expected) => {
    expect(interpolateCompose(value, shell)).toBe(expected);
  });

  it('a required variable that is unset is an error', () => {
    expect(() => interpolateCompose('${A:?set A}', {})).toThrow('set A');
    expect(interpolateCompose('${A:?set A}', { A: 'v' })).toBe('v');
  });
});

describe('composeEnvironment', () => {
  const compose = `
x-common: &common
  LOG_LEVEL: \${LOG_LEVEL:-info}
  SHARED: "1"
services:
  app:
    environment:
      <<: *common
      PORT: 8080
      EMPTY: \${NOT_SET:-}
      PASSED:
  listed:
    environment:
      - A=1
      - B=x=y
      - C
`;
  it('resolves merge keys, interpolates, and turns numbers into strings', () => {
    expect(composeEnvironment(compose, 'app')).toEqual({ LOG_LEVEL: 'info', SHARED: '1', PORT: '8080', EMPTY: '' });
    expect(composeEnvironment(compose, 'app', { PASSED: 'from-shell', LOG_LEVEL: 'debug' })).toMatchObject({ PASSED: 'from-shell', LOG_LEVEL: 'debug' });
  });

  it('reads the list form', () => {
    expect(composeEnvironment(compose, 'listed', { C: 'c' })).toEqual({ A: '1', B: 'x=y', C: 'c' });
  });

  it('is undefined for a service compose does not have', () => {
    expect(composeEnvironment(compose, 'other')).toBeUndefined();
  });
});

describe('k8sEnvironment', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'th-k8s-'));
    writeFileSync(
      join(dir, 'config.yaml'),
      `apiVersion: v1
kind: ConfigMap
metadata: { name: cfg }
data:
  LOG_LEVEL: warn
  PORT_FROM_MAP: "9000"
---
apiVersion: v1
kind: Secret
metadata: { name: sec }
data:
  ENCODED: ${Buffer.from('decoded-value').toString('base64')}
stringData:
  PLAIN: plain-value
`,
    );
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const workload = (env: string, envFrom = '') => `apiVersion: apps/v1
kind: Deployment
metadata: { name: app }
spec:
  template:
    spec:
      containers:
        - name: sidecar
          env: [{ name: IGNORED, value: "1" }]
        - name: app
${envFrom}          env:
${env}`;

  it('resolves values, ConfigMap and Secret keys (base64 data and stringData) of the named container', () => {
    writeFileSync(
      join(dir, 'app.yaml'),
      workload(`            - { name: PORT, value: 8080 }
            - { name: LOG_LEVEL, valueFrom: { configMapKeyRef: { name: cfg, key: LOG_LEVEL } } }
            - { name: A, valueFrom: { secretKeyRef: { name: sec, key: ENCODED } } }
            - { name: B, valueFrom: { secretKeyRef: { name: sec, key: PLAIN } } }
            - { name: C, valueFrom: { secretKeyRef: { name: sec, key: ABSENT, optional: true } } }
`),
    );
    expect(k8sEnvironment(dir, 'app')).toEqual({ PORT: '8080', LOG_LEVEL: 'warn', A: 'decoded-value', B: 'plain-value' });
  });

  it('takes whole maps with envFrom, env entries overriding them', () => {
    writeFileSync(join(dir, 'app.yaml'), workload(`            - { name: LOG_LEVEL, value: error }\n`, `          envFrom: [{ configMapRef: { name: cfg } }]\n`));
    expect(k8sEnvironment(dir, 'app')).toEqual({ LOG_LEVEL: 'error', PORT_FROM_MAP: '9000' });
  });

  it('a reference to a key or a map that no manifest has is an error', () => {
    writeFileSync(join(dir, 'app.yaml'), workload(`            - { name: X, valueFrom: { configMapKeyRef: { name: cfg, key: MISSING } } }\n`));
    expect(() => k8sEnvironment(dir, 'app')).toThrow('X refers to key MISSING of ConfigMap cfg');
    writeFileSync(join(dir, 'app.yaml'), workload(`            - { name: X, valueFrom: { secretKeyRef: { name: nowhere, key: K } } }\n`));
    expect(() => k8sEnvironment(dir, 'app')).toThrow('refers to Secret nowhere, which no manifest defines');
  });

  it('no manifest for the app is undefined; a manifest without its container is an error', () => {
    expect(k8sEnvironment(dir, 'absent')).toBeUndefined();
    writeFileSync(join(dir, 'lonely.yaml'), workload(''));
    expect(() => k8sEnvironment(dir, 'lonely')).toThrow('no workload with a container named lonely');
  });
});

describe('deploySources and deployedEnvironment', () => {
  it('find the compose service and the manifest of an app', () => {
    const root = mkdtempSync(join(tmpdir(), 'th-deploy-'));
    try {
      mkdirSync(join(root, 'deploy', 'k8s'), { recursive: true });
      writeFileSync(join(root, 'docker-compose.yml'), 'services:\n  both: { environment: { A: "1" } }\n  compose-only: {}\n');
      writeFileSync(join(root, 'deploy', 'k8s', 'both.yaml'), 'kind: Deployment\nspec: { template: { spec: { containers: [{ name: both, env: [{ name: B, value: "2" }] }] } } }\n');
      expect(deploySources(root, 'both')).toEqual(['docker-compose.yml', 'deploy/k8s/both.yaml']);
      expect(deploySources(root, 'compose-only')).toEqual(['docker-compose.yml']);
      expect(deploySources(root, 'none')).toEqual([]);
      expect(deployedEnvironment(root, 'docker-compose.yml', 'both')).toEqual({ A: '1' });
      expect(deployedEnvironment(root, 'deploy/k8s/both.yaml', 'both')).toEqual({ B: '2' });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('portProblems', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'th-ports-'));
    mkdirSync(join(root, 'deploy', 'k8s'), { recursive: true });
    writeFileSync(
      join(root, 'docker-compose.yml'),
      `services:
  good:
    expose: ["8081"]
    ports: ["\${OUTSIDE:-9000}:8081", "127.0.0.1:9001:8081/tcp"]
    healthcheck: { test: ["CMD", "node", "-e", "fetch('http://127.0.0.1:8081/health/ready')"] }
  bad:
    expose: [8082]
    ports: ["9000:8083"]
    healthcheck: { test: ["CMD", "curl", "http://localhost:8084/health"] }
  none: {}
`,
    );
    const manifest = (port: number, probePort: string | number) => `kind: Deployment
spec:
  template:
    spec:
      containers:
        - name: app
          ports: [{ name: http, containerPort: ${port} }]
          readinessProbe: { httpGet: { path: /health/ready, port: ${probePort} } }
          livenessProbe: { tcpSocket: { port: ${probePort} } }
`;
    writeFileSync(join(root, 'deploy', 'k8s', 'app.yaml'), manifest(8081, 'http'));
    writeFileSync(join(root, 'deploy', 'k8s', 'numeric.yaml'), manifest(8081, 8081).replace('name: app', 'name: numeric'));
    writeFileSync(join(root, 'deploy', 'k8s', 'wrong.yaml'), manifest(8090, 'web').replace('name: app', 'name: wrong'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('accepts compose expose, ports and health check on the app port', () => {
    expect(portProblems(root, 'docker-compose.yml', 'good', 8081)).toEqual([]);
  });

  it('names every compose port that is another', () => {
    expect(portProblems(root, 'docker-compose.yml', 'bad', 8081)).toEqual([
      'docker-compose.yml: expose 8082, while bad listens on 8081',
      'docker-compose.yml: ports 9000:8083, while bad listens on 8081',
      'docker-compose.yml: healthcheck localhost:8084, while bad listens on 8081',
    ]);
    expect(portProblems(root, 'docker-compose.yml', 'none', 8081)).toEqual(['docker-compose.yml: no expose or ports, while none listens on 8081']);
  });

  it('resolves probe ports by name or number against the container port', () => {
    expect(portProblems(root, 'deploy/k8s/app.yaml', 'app', 8081)).toEqual([]);
    expect(portProblems(root, 'deploy/k8s/numeric.yaml', 'numeric', 8081)).toEqual([]);
    expect(portProblems(root, 'deploy/k8s/wrong.yaml', 'wrong', 8081)).toEqual([
      'deploy/k8s/wrong.yaml: containerPort 8090, while wrong listens on 8081',
      'deploy/k8s/wrong.yaml: readinessProbe port web, while wrong listens on 8081',
      'deploy/k8s/wrong.yaml: livenessProbe port web, while wrong listens on 8081',
    ]);
  });
});

describe('settingsProblems', () => {
  const schema = z.object({ URL: z.string().url(), COUNT: z.coerce.number().int().default(1) });

  it('is empty for settings the schema reads and accepts (runtime variables allowed)', () => {
    expect(settingsProblems(schema, { URL: 'http://x:1', HOME: '/data/home', APP: 'gateway' })).toEqual([]);
  });

  it('names settings the app does not read, and what the schema refuses', () => {
    expect(settingsProblems(schema, { URL: 'not a url', COUNTS: '2' })).toEqual(['COUNTS: not a setting this app reads', expect.stringMatching(/^URL: /)]);
    expect(settingsProblems(schema, {})).toEqual([expect.stringMatching(/^URL: /)]);
  });
});
