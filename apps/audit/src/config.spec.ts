import { join } from 'node:path';
import { describeDeployedSettings } from '@th/testing';
import { auditConfigSchema } from './config';

describeDeployedSettings(join(__dirname, '..', '..', '..'), 'audit', auditConfigSchema, ['docker-compose.yml', 'deploy/k8s/audit.yaml']);
