import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

export const QUERY_SCHEMA = 'query';

@Entity({ name: 'projects', schema: QUERY_SCHEMA })
@Index('projects_tenant_name', ['tenant_id', 'name'], { unique: true })
export class ProjectEntity {
  // Unique per workspace (see the ProjectsTenantKey migration).
  @PrimaryColumn('uuid') id!: string;
  @PrimaryColumn('uuid') tenant_id!: string;
  @Column('text') name!: string;
  @Column('text', { nullable: true }) description!: string | null;
  @Column('jsonb', { nullable: true }) extra!: Record<string, unknown> | null;
  @Column('timestamptz') start_time!: Date;
  @Column('timestamptz', { nullable: true }) end_time!: Date | null;
  @Column('uuid', { nullable: true }) reference_dataset_id!: string | null;
  @Column('uuid', { nullable: true }) default_dataset_id!: string | null;
  @Column('text', { nullable: true }) trace_tier!: string | null;
  @Column('timestamptz') created_at!: Date;
  @Column('timestamptz') modified_at!: Date;
}
