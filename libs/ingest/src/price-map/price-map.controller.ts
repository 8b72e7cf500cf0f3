import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put } from '@nestjs/common';
import {
  modelPriceMapCreateSchema,
  modelPriceMapIdParamSchema,
  modelPriceMapUpdateSchema,
  type Identity,
  type ModelPriceMap,
} from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import { parseOrThrow } from '@th/platform';
import { PriceMapService } from './price-map.service';

@Controller('model-price-map')
export class PriceMapController {
  constructor(private readonly prices: PriceMapService) {}

  @Get()
  list(@CurrentIdentity() identity: Identity): Promise<ModelPriceMap[]> {
    return this.prices.list(identity);
  }

  @Post()
  @TrackedOperation()
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<ModelPriceMap> {
    return this.prices.create(identity, parseOrThrow(modelPriceMapCreateSchema, body, ['body']));
  }

  @Put(':id')
  @TrackedOperation()
  put(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<ModelPriceMap> {
    return this.update(identity, params, body);
  }

  @Patch(':id')
  @TrackedOperation()
  update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<ModelPriceMap> {
    const { id } = parseOrThrow(modelPriceMapIdParamSchema, params, ['path']);
    return this.prices.update(identity, id, parseOrThrow(modelPriceMapUpdateSchema, body ?? {}, ['body']));
  }

  @Delete(':id')
  @TrackedOperation()
  @HttpCode(200)
  async delete(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    const { id } = parseOrThrow(modelPriceMapIdParamSchema, params, ['path']);
    await this.prices.delete(identity, id);
    return {};
  }
}
