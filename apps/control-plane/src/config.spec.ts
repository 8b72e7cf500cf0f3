import { join } from 'node:path';
import { describeDeployedSettings } from '@th/testing';
import { controlPlaneConfigSchema } from './config';

describeDeployedSettings(join(__dirname, '..', '..', '..'), 'control-plane', controlPlaneConfigSchema, ['docker-compose.yml', 'deploy/k8s/control-plane.yaml']);
