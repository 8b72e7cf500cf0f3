import { PromptHub1735000000000 } from './migrations/1735000000000-prompt-hub';

export * from './prompt-hub.module';
export { PromptHubService, commitHash, checkManifest, manifestForPull } from './prompt-hub.service';
export { PROMPT_HUB_SCHEMA } from './prompt-hub.repository';
export const PROMPT_HUB_ENTITIES = [];
export const PROMPT_HUB_MIGRATIONS = [PromptHub1735000000000];
