import { Column, Entity, Index, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';

export const DATASETS_SCHEMA = 'datasets';

@Entity({ name: 'datasets', schema: DATASETS_SCHEMA })
@Index('datasets_tenant_name', ['tenant_id', 'name'], { unique: true })
export class DatasetEntity {
  // Unique per workspace (see the DatasetsTenantKey migration).
  @PrimaryColumn('uuid') id!: string;
  @PrimaryColumn('uuid') tenant_id!: string;
  @Column('text') name!: string;
  @Column('text', { nullable: true }) description!: string | null;
  @Column('text') data_type!: string;
  @Column('jsonb', { nullable: true }) inputs_schema_definition!: Record<string, unknown> | null;
  @Column('jsonb', { nullable: true }) outputs_schema_definition!: Record<string, unknown> | null;
  @Column('boolean') externally_managed!: boolean;
  @Column('boolean') created_by_upload!: boolean;
  @Column('jsonb', { nullable: true }) extra!: Record<string, unknown> | null;
  @Column('uuid', { nullable: true }) share_token!: string | null;
  @Column('integer') current_version!: number;
  @Column('timestamptz') created_at!: Date;
  @Column('timestamptz') modified_at!: Date;
}

/** One state of an example, valid for dataset versions [valid_from, valid_to). */
@Entity({ name: 'examples', schema: DATASETS_SCHEMA })
export class ExampleRowEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint' }) row_id!: string;
  @Column('uuid') id!: string;
  @Column('uuid') dataset_id!: string;
  @Column('uuid') tenant_id!: string;
  @Column('integer') valid_from!: number;
  @Column('integer', { nullable: true }) valid_to!: number | null;
  @Column('jsonb') inputs!: Record<string, unknown>;
  @Column('jsonb', { nullable: true }) outputs!: Record<string, unknown> | null;
  @Column('jsonb', { nullable: true }) metadata!: Record<string, unknown> | null;
  @Column('text', { array: true }) splits!: string[];
  @Column('uuid', { nullable: true }) source_run_id!: string | null;
  @Column('timestamptz') created_at!: Date;
  @Column('timestamptz') modified_at!: Date;
  /** {name: {blob_id, mime_type}} of this state's attachments; null when none. */
  @Column('jsonb', { nullable: true }) attachments!: Record<string, { blob_id: string; mime_type: string }> | null;
}
