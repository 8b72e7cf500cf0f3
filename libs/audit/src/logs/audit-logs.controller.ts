import { Controller, Get, Headers, Query } from '@nestjs/common';
import { auditLogsQuerySchema, type AuditChainVerification, type AuditLogsResponse, type Identity } from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { parseOrThrow } from '@th/platform';
import { AuditLogsService } from './audit-logs.service';

@Controller('audit-logs')
export class AuditLogsController {
  constructor(private readonly logs: AuditLogsService) {}

  @Get()
  list(@CurrentIdentity() identity: Identity, @Headers('x-organization-id') org: string | undefined, @Query() query: unknown): Promise<AuditLogsResponse> {
    return this.logs.list(identity, org, parseOrThrow(auditLogsQuerySchema, query, ['query']));
  }

  /** Walks the organization's hash chain and reports the first break. */
  @Get('verify')
  verify(@CurrentIdentity() identity: Identity, @Headers('x-organization-id') org: string | undefined): Promise<AuditChainVerification> {
    return this.logs.verify(identity, org);
  }
}
