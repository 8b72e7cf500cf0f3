import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Controller, Delete, Get, Module, Patch, Post, Put, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { BusModule, InProcessBus } from '@th/bus';
import { TOPICS, type AuditRecord } from '@th/contracts';
import { HealthModule } from '@th/platform';
import { AuditClientModule } from './audit-client.module';
import { inTrackedOperation } from './audit-context';
import { AuditPublisher } from './audit.publisher';
import { TrackedOperation } from './tracked-operation';

const created = randomUUID();

/**
 * Routes at paths whose entries in the route table name tracked operations (POST /datasets: create_dataset,
 * PATCH /datasets/{dataset_id}: update_dataset, ...), each handler standing for one way a service may behave.
 */
@Controller('datasets')
class Routes {
  constructor(private readonly audit: AuditPublisher) {}

  /** A service recording its outcome with the resources it knows, naming no operation. */
  @Post()
  @TrackedOperation()
  create(): Promise<{ id: string }> {
    return this.audit.track({ identity: null, resources: [] }, async () => ({ id: created }), (r) => [{ type: 'dataset', id: r.id }]);
  }

  /** A handler that records nothing itself. */
  @Patch(':dataset_id')
  @TrackedOperation()
  update(): Promise<{ ok: true }> {
    return Promise.resolve({ ok: true });
  }

  /** A handler that fails before any service records. */
  @Delete(':dataset_id')
  @TrackedOperation()
  delete(): Promise<void> {
    return Promise.reject(new Error('refused before the service'));
  }

  /** A service that tries to record another operation than its route's. */
  @Put(':dataset_id/share')
  @TrackedOperation()
  share(): Promise<{ id: string }> {
    return inTrackedOperation('create_dataset', () => this.audit.track({ identity: null, resources: [] }, async () => ({ id: created })));
  }

  /** A service that records an event of another operation itself. */
  @Put(':dataset_id/tags')
  @TrackedOperation()
  tag(): Promise<void> {
    return this.audit.record({ operation: 'delete_dataset', identity: null, resources: [] });
  }

  /** A route that is no tracked operation, whose handler reaches a tracked service method. */
  @Get(':dataset_id')
  get(): Promise<{ id: string }> {
    return this.audit.track({ identity: null, resources: [] }, async () => ({ id: created }));
  }
}

/** The audit context of tracked routes, on a real Nest HTTP server and the in-process bus. */
describe('tracked routes record the operation of their entry in the route table, once per attempt', () => {
  let bus: InProcessBus;
  let app: INestApplication;
  let base: string;
  const audit: AuditRecord[] = [];

  beforeAll(async () => {
    bus = new InProcessBus();
    await bus.subscribe(TOPICS.audit, { groupId: 'tracked-route-spec' }, async (batch) => {
      for (const m of batch) audit.push(m.value as AuditRecord);
    });
    @Module({ imports: [HealthModule, BusModule.forRoot({ instance: bus }), AuditClientModule.forRoot({ service: 'test' })], controllers: [Routes] })
    class AppModule {}
    app = await NestFactory.create(AppModule, { logger: false, abortOnError: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await app?.close();
    await bus?.close();
  });

  /** The status of one request and the audit events it caused (durable before the answer). */
  async function attempt(method: string, path: string): Promise<{ status: number; events: [string, string, unknown, unknown][] }> {
    const before = audit.length;
    const res = await fetch(base + path, { method });
    await res.arrayBuffer();
    return { status: res.status, events: audit.slice(before).map((e) => [e.operation, e.status, e.resources, e.error]) };
  }

  it("a service's track records the route's operation with the service's resources", async () => {
    expect(await attempt('POST', '/datasets')).toEqual({ status: 201, events: [['create_dataset', 'Success', [{ type: 'dataset', id: created }], undefined]] });
  });

  it('a handler that recorded nothing gets its Success from the interceptor, naming the path resource', async () => {
    const id = randomUUID();
    expect(await attempt('PATCH', `/datasets/${id}`)).toEqual({ status: 200, events: [['update_dataset', 'Success', [{ type: 'dataset', id }], undefined]] });
  });

  it('a handler that threw before any record gets its Failure from the interceptor', async () => {
    const id = randomUUID();
    expect(await attempt('DELETE', `/datasets/${id}`)).toEqual({ status: 500, events: [['delete_dataset', 'Failure', [{ type: 'dataset', id }], 'refused before the service']] });
  });

  it("another operation than the route's is refused inside a tracked route: the attempt is the route's Failure, nothing else is recorded", async () => {
    const id = randomUUID();
    const r = await attempt('PUT', `/datasets/${id}/share`);
    expect(r.status).toBe(500);
    expect(r.events).toEqual([['share_dataset', 'Failure', [{ type: 'dataset', id }], expect.stringContaining("inTrackedOperation('create_dataset') inside the tracked operation 'share_dataset'")]]);
  });

  it("a service recording another operation than its route's directly is refused the same way", async () => {
    const id = randomUUID();
    const r = await attempt('PUT', `/datasets/${id}/tags`);
    expect(r.status).toBe(500);
    expect(r.events).toEqual([['update_dataset_version', 'Failure', [{ type: 'dataset', id }], expect.stringContaining("Cannot record 'delete_dataset' inside the tracked operation 'update_dataset_version'")]]);
  });

  it('a tracked service method reached outside any tracked operation throws before it runs and records nothing', async () => {
    expect(await attempt('GET', `/datasets/${randomUUID()}`)).toEqual({ status: 500, events: [] });
    const publisher = app.get(AuditPublisher);
    let ran = false;
    await expect(publisher.track({ identity: null }, async () => (ran = true))).rejects.toThrow(/No tracked operation here/);
    expect(ran).toBe(false);
    // @ts-expect-error track takes no operation: a service cannot name one of its own.
    await expect(inTrackedOperation('create_dataset', () => publisher.track({ operation: 'delete_dataset', identity: null }, async () => 1))).resolves.toBe(1);
  });

  it('a caller outside any route names the operation with inTrackedOperation', async () => {
    const before = audit.length;
    await inTrackedOperation('create_dataset', () => app.get(AuditPublisher).track({ identity: null, resources: [] }, async () => ({ id: created }), (r) => [{ type: 'dataset', id: r.id }]));
    expect(audit.slice(before).map((e) => [e.operation, e.status, e.resources])).toEqual([['create_dataset', 'Success', [{ type: 'dataset', id: created }]]]);
  });
});
