import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import {
  deploymentCreateRequestSchema,
  deploymentIdParamSchema,
  deploymentListQuerySchema,
  deploymentPatchRequestSchema,
  revisionIdParamSchema,
  revisionListQuerySchema,
  UPLOADS_PATH,
  type Deployment,
  type DeploymentList,
  type Identity,
  type Revision,
  type RevisionList,
  type UploadUrl,
} from '@th/contracts';
import { CurrentIdentity, Public } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import { badRequest, parseOrThrow, requestBaseUrl, type RawBodyRequest } from '@th/platform';
import { DeploymentsService } from './deployments.service';

@Controller('v2/deployments')
export class DeploymentsController {
  constructor(private readonly deployments: DeploymentsService) {}

  @Post()
  @TrackedOperation()
  @HttpCode(201)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Deployment> {
    return this.deployments.create(identity, parseOrThrow(deploymentCreateRequestSchema, body, ['body']));
  }

  @Get()
  list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<DeploymentList> {
    return this.deployments.list(identity, parseOrThrow(deploymentListQuerySchema, query, ['query']));
  }

  @Get(':deployment_id')
  get(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Deployment> {
    return this.deployments.get(identity, parseOrThrow(deploymentIdParamSchema, params, ['path']).deployment_id);
  }

  @Patch(':deployment_id')
  @TrackedOperation()
  update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<Deployment> {
    const { deployment_id } = parseOrThrow(deploymentIdParamSchema, params, ['path']);
    return this.deployments.update(identity, deployment_id, parseOrThrow(deploymentPatchRequestSchema, body ?? {}, ['body']));
  }

  @Delete(':deployment_id')
  @TrackedOperation()
  @HttpCode(202)
  delete(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Deployment> {
    return this.deployments.delete(identity, parseOrThrow(deploymentIdParamSchema, params, ['path']).deployment_id);
  }

  @Get(':deployment_id/revisions')
  revisions(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<RevisionList> {
    const { deployment_id } = parseOrThrow(deploymentIdParamSchema, params, ['path']);
    return this.deployments.listRevisions(identity, deployment_id, parseOrThrow(revisionListQuerySchema, query, ['query']));
  }

  @Get(':deployment_id/revisions/:revision_id')
  revision(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Revision> {
    const { deployment_id, revision_id } = parseOrThrow(revisionIdParamSchema, params, ['path']);
    return this.deployments.getRevision(identity, deployment_id, revision_id);
  }

  @Post(':deployment_id/upload-url')
  @HttpCode(200)
  uploadUrl(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Req() req: Request): Promise<UploadUrl> {
    return this.deployments.uploadUrl(identity, parseOrThrow(deploymentIdParamSchema, params, ['path']).deployment_id, requestBaseUrl(req));
  }
}

/** The spec writes the upload-url operation without a version segment; both forms are served. */
@Controller('deployments')
export class UnversionedUploadUrlController {
  constructor(private readonly deployments: DeploymentsService) {}

  @Post(':deployment_id/upload-url')
  @HttpCode(200)
  uploadUrl(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Req() req: Request): Promise<UploadUrl> {
    return this.deployments.uploadUrl(identity, parseOrThrow(deploymentIdParamSchema, params, ['path']).deployment_id, requestBaseUrl(req));
  }
}

/** The issued upload URL: the unguessable object path is the credential, like a presigned object-store URL. */
@Controller(UPLOADS_PATH)
export class UploadsController {
  constructor(private readonly deployments: DeploymentsService) {}

  @Put('*object_path')
  @Public()
  @HttpCode(200)
  async put(@Req() req: RawBodyRequest): Promise<{ object_path: string }> {
    const objectPath = req.path.slice(UPLOADS_PATH.length + 1);
    if (!/^deployments\/[0-9a-f-]{36}\/sources\/[0-9a-f-]{36}-[0-9a-f]{32}\.tar\.gz$/.test(objectPath)) throw badRequest('Not an issued object path');
    await this.deployments.storeUpload(objectPath, req.rawBody ?? Buffer.alloc(0));
    return { object_path: objectPath };
  }
}
