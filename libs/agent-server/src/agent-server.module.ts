import { Module } from '@nestjs/common';

/** The agent-server service: assistants, threads and runs of a deployed agent server. Its domain arrives with its own issue; today it boots, reports health and joins the bus. */
@Module({})
export class AgentServerModule {}
