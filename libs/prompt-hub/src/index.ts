import { PromptHub1735000000000 } from './migrations/1735000000000-prompt-hub';
import { PromptWebhooks1735000000001 } from './migrations/1735000000001-prompt-webhooks';
import { RepoTypes1735000000002 } from './migrations/1735000000002-repo-types';
import { WebhookDeliveries1735000000003 } from './migrations/1735000000003-webhook-deliveries';
import { HandlesFromWorkspaces1735000000004 } from './migrations/1735000000004-handles-from-workspaces';

export * from './prompt-hub.module';
export type { PromptWebhookDeliveryOptions } from './prompt-webhook.delivery';
export { PromptHubService, commitHash, checkManifest, manifestForPull } from './prompt-hub.service';
export { PROMPT_HUB_SCHEMA } from './prompt-hub.repository';
export const PROMPT_HUB_ENTITIES = [];
export const PROMPT_HUB_MIGRATIONS = [PromptHub1735000000000, PromptWebhooks1735000000001, RepoTypes1735000000002, WebhookDeliveries1735000000003, HandlesFromWorkspaces1735000000004];
export { signWebhookBody, SIGNATURE_HEADER, EVENT_HEADER } from './prompt-webhook.delivery';
export { webhookCovers } from './prompt-webhooks.service';
