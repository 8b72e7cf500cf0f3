import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  compareDatasetParamSchema,
  datasetListQuerySchema,
  toV2Run,
  v2CursorPageQuerySchema,
  v2ExperimentRunQuerySchema,
  type Dataset,
  type Identity,
} from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { decodeOffsetCursor, encodePageCursor, parseOrThrow } from '@th/platform';
import { DatasetsService } from '../datasets.service';
import { ExperimentCompareService } from './experiment-compare.service';

interface V2Page<T> {
  items: T[];
  next_cursor: string;
}

/** The SDKs' generated (v2) client: datasets in cursor pages, and the examples of a dataset with their experiments' runs. */
@Controller('api/v2/datasets')
export class V2DatasetsController {
  constructor(
    private readonly datasets: DatasetsService,
    private readonly comparison: ExperimentCompareService,
  ) {}

  @Get()
  async list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<V2Page<Dataset>> {
    const { page_size, cursor, ...filters } = query && typeof query === 'object' ? (query as Record<string, unknown>) : {};
    const page = parseOrThrow(v2CursorPageQuerySchema, { page_size, cursor }, ['query']);
    const offset = decodeOffsetCursor(page.cursor, ['query', 'cursor']);
    const rows = await this.datasets.list(identity, parseOrThrow(datasetListQuerySchema, { ...filters, offset, limit: page.page_size + 1 }, ['query']));
    return { items: rows.slice(0, page.page_size), next_cursor: rows.length > page.page_size ? encodePageCursor({ o: offset + page.page_size }) : '' };
  }

  @Post(':dataset_id/experiment-runs')
  @HttpCode(200)
  async experimentRuns(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<V2Page<Record<string, unknown>>> {
    const { dataset_id } = parseOrThrow(compareDatasetParamSchema, params, ['path']);
    const q = parseOrThrow(v2ExperimentRunQuerySchema, body ?? {}, ['body']);
    const offset = decodeOffsetCursor(q.cursor, ['body', 'cursor']);
    const examples = await this.comparison.experimentRuns(identity, dataset_id, q, offset, q.page_size + 1);
    const page = examples.slice(0, q.page_size);
    return {
      items: page.map(({ runs, split: _split, ...example }) => ({ ...example, runs: runs.map((r) => toV2Run(r, q.selects)) })),
      next_cursor: examples.length > q.page_size ? encodePageCursor({ o: offset + q.page_size }) : '',
    };
  }
}
