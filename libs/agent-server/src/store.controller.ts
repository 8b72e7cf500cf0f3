import { Body, Controller, Delete, Get, HttpCode, Inject, Post, Put, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import type { AgentStoreItem, AgentStoreSearchItem } from '@th/contracts';
import { StoreService } from './store.service';

export const STORE_SERVICE = Symbol('STORE_SERVICE');

@Controller('store')
export class StoreController {
  constructor(@Inject(STORE_SERVICE) private readonly store: StoreService) {}

  @Put('items')
  @HttpCode(204)
  async put(@Body() body: unknown): Promise<void> {
    await this.store.putItem(body);
  }

  /** Sent by hand: Nest would answer a null result with an empty body, which the client cannot parse. */
  @Get('items')
  async get(@Query() query: Record<string, unknown>, @Res() res: Response): Promise<void> {
    const item: AgentStoreItem | null = await this.store.getItem(query);
    res.status(200).type('application/json').send(JSON.stringify(item));
  }

  @Delete('items')
  @HttpCode(204)
  async remove(@Body() body: unknown): Promise<void> {
    await this.store.deleteItem(body);
  }

  @Post('items/search')
  @HttpCode(200)
  search(@Body() body: unknown): Promise<{ items: AgentStoreSearchItem[] }> {
    return this.store.searchItems(body);
  }

  @Post('namespaces')
  @HttpCode(200)
  namespaces(@Body() body: unknown): Promise<{ namespaces: string[][] }> {
    return this.store.listNamespaces(body);
  }
}
