import { join } from 'node:path';
import { describeDeployedSettings } from '@th/testing';
import { queryConfigSchema } from './config';

describeDeployedSettings(join(__dirname, '..', '..', '..'), 'query', queryConfigSchema, ['docker-compose.yml', 'deploy/k8s/query.yaml']);
