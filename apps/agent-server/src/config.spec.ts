import { join } from 'node:path';
import { describeDeployedSettings } from '@th/testing';
import { agentServerConfigSchema } from '@th/agent-server';

describeDeployedSettings(join(__dirname, '..', '..', '..'), 'agent-server', agentServerConfigSchema, ['docker-compose.yml']);
