import { join } from 'node:path';
import { describeDeployedSettings } from '@th/testing';
import { standaloneConfigSchema } from './config';

describeDeployedSettings(join(__dirname, '..', '..', '..'), 'standalone', standaloneConfigSchema, ['docker-compose.yml']);
