import { Module } from '@nestjs/common';

/** The control-plane service: the deployment control plane (deployments, revisions, listeners). Its domain arrives with its own issue; today it boots, reports health and joins the bus. */
@Module({})
export class ControlPlaneModule {}
