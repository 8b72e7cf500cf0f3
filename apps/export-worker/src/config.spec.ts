import { join } from 'node:path';
import { describeDeployedSettings } from '@th/testing';
import { exportWorkerConfigSchema } from './config';

describeDeployedSettings(join(__dirname, '..', '..', '..'), 'export-worker', exportWorkerConfigSchema, ['docker-compose.yml', 'deploy/k8s/export-worker.yaml']);
