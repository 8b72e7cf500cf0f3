import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { listenerCreateRequestSchema, listenerListQuerySchema, type Identity, type Listener } from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { badRequest, parseOrThrow } from '@th/platform';
import { ListenersRepository, type ListenerRow } from './listeners.repository';

const toListener = (l: ListenerRow): Listener => ({ ...l, created_at: new Date(l.created_at).toISOString() });

@Controller('v2/listeners')
export class ListenersController {
  constructor(private readonly listeners: ListenersRepository) {}

  @Get()
  async list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<{ resources: Listener[]; offset: number; limit: number; total: number }> {
    const q = parseOrThrow(listenerListQuerySchema, query, ['query']);
    const { rows, total } = await this.listeners.list({ tenant_id: identity.tenant_id }, q);
    return { resources: rows.map(toListener), offset: q.offset, limit: q.limit, total };
  }

  /** Registers a listener: a compute target (today `k8s`) with the namespaces it may deploy into. */
  @Post()
  @HttpCode(201)
  async create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Listener> {
    const req = parseOrThrow(listenerCreateRequestSchema, body, ['body']);
    const row: ListenerRow = {
      id: randomUUID(),
      tenant_id: identity.tenant_id,
      name: req.name,
      compute_type: req.compute_type,
      k8s_namespaces: [...new Set(req.k8s_namespaces)],
      created_at: new Date(),
    };
    if (!(await this.listeners.insert(row))) throw badRequest(`A listener named ${req.name} already exists`);
    return toListener(row);
  }
}
