import { Module } from '@nestjs/common';

/** The export-worker service: bulk exports of runs to object storage. Its domain arrives with its own issue; today it boots, reports health and joins the bus. */
@Module({})
export class ExportWorkerModule {}
