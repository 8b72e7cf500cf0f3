import { Module } from '@nestjs/common';

/** The audit service: the audit log store and GET /api/v1/audit-logs. Its domain arrives with its own issue; today it boots, reports health and joins the bus. */
@Module({})
export class AuditModule {}
