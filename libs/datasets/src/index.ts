import { DatasetEntity, ExampleRowEntity } from './dataset.entity';
import { Datasets1732900000000 } from './migrations/1732900000000-datasets';
import { ExampleAttachments1733100000000 } from './migrations/1733100000000-example-attachments';
import { ExamplesTenantKey1734000000001 } from './migrations/1734000000001-examples-tenant-key';
import { DatasetsTenantKey1734000000002 } from './migrations/1734000000002-datasets-tenant-key';
import { ComparativeExperiments1734100000000 } from './migrations/1734100000000-comparative-experiments';

export * from './datasets.module';
export * from './datasets.service';
export * from './examples.service';
export { DATASETS_SCHEMA, DatasetEntity, ExampleRowEntity } from './dataset.entity';
export type { DatasetRow, ExampleRow } from './datasets.store';
export const DATASETS_ENTITIES = [DatasetEntity, ExampleRowEntity];
export const DATASETS_MIGRATIONS = [Datasets1732900000000, ExampleAttachments1733100000000, ExamplesTenantKey1734000000001, DatasetsTenantKey1734000000002, ComparativeExperiments1734100000000];
export * from './experiments';
