import { Body, Controller, Delete, Get, HttpCode, Inject, Post, Put, Query } from '@nestjs/common';
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

  @Get('items')
  get(@Query() query: Record<string, unknown>): Promise<AgentStoreItem> {
    return this.store.getItem(query);
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
