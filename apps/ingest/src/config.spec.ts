import { join } from 'node:path';
import { describeDeployedSettings } from '@th/testing';
import { ingestConfigSchema } from './config';

describeDeployedSettings(join(__dirname, '..', '..', '..'), 'ingest', ingestConfigSchema, ['docker-compose.yml', 'deploy/k8s/ingest.yaml']);
