import { Body, Controller, Delete, Get, Header, HttpCode, Param, Patch, Post, Query, Req } from '@nestjs/common';
import {
  promptCommitCreateSchema,
  promptCommitGetQuerySchema,
  promptCommitListQuerySchema,
  promptCommitParamSchema,
  promptLikeSchema,
  promptRepoCreateSchema,
  promptRepoListQuerySchema,
  promptRepoParamSchema,
  promptRepoUpdateSchema,
  promptTagCreateSchema,
  promptTagParamSchema,
  promptTagUpdateSchema,
  hubDirectoryCommitSchema,
  hubDirectoryQuerySchema,
  type HubDirectory,
  promptWebhookCreateSchema,
  promptWebhookDeliveryListQuerySchema,
  type PromptWebhookDelivery,
  promptWebhookIdParamSchema,
  promptWebhookTestSchema,
  promptWebhookUpdateSchema,
  type PromptWebhook,
  type Identity,
  type PromptCommitListed,
  type PromptCommitTag,
  type PromptRepo,
} from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import { parseOrThrow, type RawBodyRequest } from '@th/platform';
import { memberText } from './manifest-text';
import { PromptHubService, pulledJson } from './prompt-hub.service';
import { PromptWebhooksService } from './prompt-webhooks.service';

@Controller('repos')
export class PromptReposController {
  constructor(private readonly hub: PromptHubService) {}

  @Get()
  list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<{ repos: PromptRepo[]; total: number }> {
    return this.hub.listRepos(identity, parseOrThrow(promptRepoListQuerySchema, query, ['query']));
  }

  @Post()
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<{ repo: PromptRepo }> {
    return this.hub.createRepo(identity, parseOrThrow(promptRepoCreateSchema, body, ['body']));
  }

  @Get(':owner/:repo')
  get(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<{ repo: PromptRepo }> {
    const p = parseOrThrow(promptRepoParamSchema, params, ['path']);
    return this.hub.getRepo(identity, p.owner, p.repo);
  }

  @Patch(':owner/:repo')
  update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<{ repo: PromptRepo }> {
    const p = parseOrThrow(promptRepoParamSchema, params, ['path']);
    return this.hub.updateRepo(identity, p.owner, p.repo, parseOrThrow(promptRepoUpdateSchema, body ?? {}, ['body']));
  }

  @Delete(':owner/:repo')
  async delete(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    const p = parseOrThrow(promptRepoParamSchema, params, ['path']);
    await this.hub.deleteRepo(identity, p.owner, p.repo);
    return {};
  }

  @Get(':owner/:repo/tags')
  listTags(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<PromptCommitTag[]> {
    const p = parseOrThrow(promptRepoParamSchema, params, ['path']);
    return this.hub.listTags(identity, p.owner, p.repo);
  }

  @Post(':owner/:repo/tags')
  @HttpCode(200)
  createTag(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<PromptCommitTag> {
    const p = parseOrThrow(promptRepoParamSchema, params, ['path']);
    const b = parseOrThrow(promptTagCreateSchema, body, ['body']);
    return this.hub.createTag(identity, p.owner, p.repo, b.tag_name, b.commit_id);
  }

  @Get(':owner/:repo/tags/:tag_name')
  getTag(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<PromptCommitTag> {
    const p = parseOrThrow(promptTagParamSchema, params, ['path']);
    return this.hub.getTag(identity, p.owner, p.repo, p.tag_name);
  }

  @Patch(':owner/:repo/tags/:tag_name')
  moveTag(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<PromptCommitTag> {
    const p = parseOrThrow(promptTagParamSchema, params, ['path']);
    return this.hub.moveTag(identity, p.owner, p.repo, p.tag_name, parseOrThrow(promptTagUpdateSchema, body, ['body']).commit_id);
  }

  @Delete(':owner/:repo/tags/:tag_name')
  async deleteTag(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    const p = parseOrThrow(promptTagParamSchema, params, ['path']);
    await this.hub.deleteTag(identity, p.owner, p.repo, p.tag_name);
    return {};
  }
}

@Controller('commits')
export class PromptCommitsController {
  constructor(private readonly hub: PromptHubService) {}

  @Get(':owner/:repo')
  list(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<{ commits: PromptCommitListed[]; total: number }> {
    const p = parseOrThrow(promptRepoParamSchema, params, ['path']);
    const q = parseOrThrow(promptCommitListQuerySchema, query, ['query']);
    return this.hub.listCommits(identity, p.owner, p.repo, q.limit, q.offset);
  }

  @Post(':owner/:repo')
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown, @Req() req: RawBodyRequest): Promise<{ commit: PromptCommitListed }> {
    const p = parseOrThrow(promptRepoParamSchema, params, ['path']);
    const b = parseOrThrow(promptCommitCreateSchema, body, ['body']);
    return this.hub.createCommit(identity, p.owner, p.repo, b, req.rawBody ? memberText(req.rawBody.toString('utf8'), 'manifest') : null);
  }

  /** The manifest comes back as it was pushed, byte for byte: the answer is written here, not by JSON.stringify. */
  @Get(':owner/:repo/:ref')
  @Header('content-type', 'application/json; charset=utf-8')
  async get(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<string> {
    const p = parseOrThrow(promptCommitParamSchema, params, ['path']);
    const pulled = await this.hub.pullCommit(identity, p.owner, p.repo, p.ref, parseOrThrow(promptCommitGetQuerySchema, query, ['query']).include_model === true);
    return pulledJson(pulled.head, pulled.manifest);
  }
}

@Controller('likes')
export class PromptLikesController {
  constructor(private readonly hub: PromptHubService) {}

  @Post(':owner/:repo')
  @HttpCode(200)
  like(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<{ likes: number }> {
    const p = parseOrThrow(promptRepoParamSchema, params, ['path']);
    return this.hub.like(identity, p.owner, p.repo, parseOrThrow(promptLikeSchema, body, ['body']).like);
  }
}

@Controller('prompt-webhooks')
export class PromptWebhooksController {
  constructor(private readonly webhooks: PromptWebhooksService) {}

  @Get()
  list(@CurrentIdentity() identity: Identity): Promise<PromptWebhook[]> {
    return this.webhooks.list(identity);
  }

  @Post()
  @TrackedOperation()
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<PromptWebhook & { secret: string }> {
    return this.webhooks.create(identity, parseOrThrow(promptWebhookCreateSchema, body, ['body']));
  }

  @Post('test')
  @TrackedOperation()
  @HttpCode(200)
  test(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Record<string, string>> {
    const b = parseOrThrow(promptWebhookTestSchema, body, ['body']);
    return this.webhooks.test(identity, b.webhook, b.payload);
  }

  @Get(':webhook_id')
  get(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<PromptWebhook> {
    return this.webhooks.get(identity, parseOrThrow(promptWebhookIdParamSchema, params, ['path']).webhook_id);
  }

  @Get(':webhook_id/deliveries')
  deliveries(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<{ deliveries: PromptWebhookDelivery[]; total: number }> {
    const { webhook_id } = parseOrThrow(promptWebhookIdParamSchema, params, ['path']);
    return this.webhooks.deliveries(identity, webhook_id, parseOrThrow(promptWebhookDeliveryListQuerySchema, query, ['query']));
  }

  @Patch(':webhook_id')
  @TrackedOperation()
  update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<PromptWebhook> {
    const { webhook_id } = parseOrThrow(promptWebhookIdParamSchema, params, ['path']);
    return this.webhooks.update(identity, webhook_id, parseOrThrow(promptWebhookUpdateSchema, body ?? {}, ['body']));
  }

  @Delete(':webhook_id')
  @TrackedOperation()
  async delete(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    await this.webhooks.delete(identity, parseOrThrow(promptWebhookIdParamSchema, params, ['path']).webhook_id);
    return {};
  }
}

/** Agents and skills: repos whose commits are directories of files. */
@Controller('v1/platform/hub/repos')
export class HubDirectoriesController {
  constructor(private readonly hub: PromptHubService) {}

  @Get(':owner/:repo/directories')
  pull(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<HubDirectory> {
    const p = parseOrThrow(promptRepoParamSchema, params, ['path']);
    return this.hub.pullDirectory(identity, p.owner, p.repo, parseOrThrow(hubDirectoryQuerySchema, query, ['query']).commit);
  }

  @Post(':owner/:repo/directories/commits')
  @HttpCode(200)
  push(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<{ commit: PromptCommitListed }> {
    const p = parseOrThrow(promptRepoParamSchema, params, ['path']);
    return this.hub.pushDirectory(identity, p.owner, p.repo, parseOrThrow(hubDirectoryCommitSchema, body, ['body']));
  }

  @Delete(':owner/:repo/directories')
  async delete(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    const p = parseOrThrow(promptRepoParamSchema, params, ['path']);
    await this.hub.deleteDirectory(identity, p.owner, p.repo);
    return {};
  }
}
