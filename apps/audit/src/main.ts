import 'reflect-metadata';
import { runBusService } from '@th/bus';
import { AuditModule } from '@th/audit';

runBusService('audit', 8085, AuditModule);
