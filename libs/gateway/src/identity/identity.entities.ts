import { Column, Entity, PrimaryColumn } from 'typeorm';

export const GATEWAY_SCHEMA = 'gateway';

@Entity({ name: 'organizations', schema: GATEWAY_SCHEMA })
export class OrganizationEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('text') name!: string;
  @Column('text') plan!: 'free' | 'plus' | 'enterprise';
  @Column('boolean') is_personal!: boolean;
  @Column('timestamptz') created_at!: Date;
}

@Entity({ name: 'workspaces', schema: GATEWAY_SCHEMA })
export class WorkspaceEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid') organization_id!: string;
  @Column('text') name!: string;
  @Column('timestamptz') created_at!: Date;
}

@Entity({ name: 'api_keys', schema: GATEWAY_SCHEMA })
export class ApiKeyEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid') organization_id!: string;
  /** Null for an organization-scoped key, which must name its workspace with X-Tenant-Id. */
  @Column('uuid', { nullable: true }) workspace_id!: string | null;
  @Column('uuid', { nullable: true }) user_id!: string | null;
  @Column('text') kind!: 'api_key' | 'personal_access_token' | 'service_key';
  @Column('text', { unique: true }) key_hash!: string;
  @Column('text') prefix!: string;
  @Column('text', { nullable: true }) description!: string | null;
  @Column('text', { array: true }) permissions!: string[];
  @Column('timestamptz') created_at!: Date;
  @Column('timestamptz', { nullable: true }) expires_at!: Date | null;
  @Column('timestamptz', { nullable: true }) revoked_at!: Date | null;
}
