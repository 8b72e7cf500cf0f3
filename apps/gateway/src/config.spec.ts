import { join } from 'node:path';
import { describeDeployedSettings } from '@th/testing';
import { gatewayConfigSchema } from './config';

describeDeployedSettings(join(__dirname, '..', '..', '..'), 'gateway', gatewayConfigSchema, ['docker-compose.yml', 'deploy/k8s/gateway.yaml']);
