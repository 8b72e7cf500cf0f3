import 'reflect-metadata';
import { runBusService } from '@th/bus';
import { ExportWorkerModule } from '@th/export-worker';

runBusService('export-worker', 8084, ExportWorkerModule);
