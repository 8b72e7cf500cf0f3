import 'reflect-metadata';
import { runBusService } from '@th/bus';
import { AgentServerModule } from '@th/agent-server';

runBusService('agent-server', 8086, AgentServerModule);
