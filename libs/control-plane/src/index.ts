export * from './control-plane.module';
export * from './control-plane.options';
export * from './control-plane.config';
export { DeploymentsService } from './deployments/deployments.service';
export { resolveResourceSpec, RESOURCE_BASE_DEFAULTS } from './deployments/resource-spec';
export { renderK8sObjects, k8sNames, type K8sObject, type K8sRenderInput } from './rollout/k8s-render';
export { DEPLOYMENT_TRANSITIONS } from './rollout/deployment-states';
export { buildControlPlaneOpenApi } from './openapi/control-plane.openapi';
