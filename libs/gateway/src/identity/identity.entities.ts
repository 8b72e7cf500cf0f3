import { Column, Entity, PrimaryColumn } from 'typeorm';

export const GATEWAY_SCHEMA = 'gateway';

/** bigint columns come back from pg as strings. */
const bigintNumber = { to: (v: number) => v, from: (v: string | null) => (v === null ? null : Number(v)) };

@Entity({ name: 'organizations', schema: GATEWAY_SCHEMA })
export class OrganizationEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('text') name!: string;
  @Column('text') plan!: 'free' | 'plus' | 'enterprise';
  @Column('boolean') is_personal!: boolean;
  /** The organization setting can_use_audit_logs; null follows DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS. */
  @Column('boolean', { nullable: true }) can_use_audit_logs!: boolean | null;
  @Column('timestamptz') created_at!: Date;
}

@Entity({ name: 'workspaces', schema: GATEWAY_SCHEMA })
export class WorkspaceEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid') organization_id!: string;
  @Column('text') name!: string;
  /** The published API's workspace handle; unique in the installation, null when none was set. */
  @Column('text', { nullable: true }) tenant_handle!: string | null;
  /** Retention of runs per trace_tier in days; null keeps them. */
  @Column('int', { nullable: true }) shortlived_ttl_days!: number | null;
  @Column('int', { nullable: true }) longlived_ttl_days!: number | null;
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
  @Column('uuid', { nullable: true }) role_id!: string | null;
  @Column('text', { array: true }) permissions!: string[];
  @Column('timestamptz') created_at!: Date;
  @Column('timestamptz', { nullable: true }) expires_at!: Date | null;
  @Column('timestamptz', { nullable: true }) revoked_at!: Date | null;
}

@Entity({ name: 'users', schema: GATEWAY_SCHEMA })
export class UserEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('text', { unique: true }) email!: string;
  @Column('text', { nullable: true }) full_name!: string | null;
  /** scrypt hash for basic-auth users; null for users who have not set a password. */
  @Column('text', { nullable: true }) password_hash!: string | null;
  @Column('timestamptz') created_at!: Date;
}

@Entity({ name: 'roles', schema: GATEWAY_SCHEMA })
export class RoleEntity {
  @PrimaryColumn('uuid') id!: string;
  /** Null for the built-in roles shared by every organization. */
  @Column('uuid', { nullable: true }) organization_id!: string | null;
  @Column('text') name!: string;
  @Column('text', { nullable: true }) description!: string | null;
  @Column('text') scope!: 'organization' | 'workspace';
  @Column('text', { array: true }) permissions!: string[];
  @Column('boolean') builtin!: boolean;
  @Column('timestamptz') created_at!: Date;
}

@Entity({ name: 'org_members', schema: GATEWAY_SCHEMA })
export class OrgMemberEntity {
  @PrimaryColumn('uuid') organization_id!: string;
  @PrimaryColumn('uuid') user_id!: string;
  @Column('uuid') role_id!: string;
  @Column('timestamptz') created_at!: Date;
}

@Entity({ name: 'org_invitations', schema: GATEWAY_SCHEMA })
export class OrgInvitationEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid') organization_id!: string;
  @Column('text') email!: string;
  @Column('uuid') role_id!: string;
  @Column('uuid', { array: true }) workspace_ids!: string[];
  @Column('uuid', { nullable: true }) workspace_role_id!: string | null;
  @Column('timestamptz') created_at!: Date;
}

@Entity({ name: 'workspace_members', schema: GATEWAY_SCHEMA })
export class WorkspaceMemberEntity {
  @PrimaryColumn('uuid') workspace_id!: string;
  @PrimaryColumn('uuid') user_id!: string;
  @Column('uuid') role_id!: string;
  @Column('timestamptz') created_at!: Date;
}

@Entity({ name: 'workspace_secrets', schema: GATEWAY_SCHEMA })
export class WorkspaceSecretEntity {
  @PrimaryColumn('uuid') workspace_id!: string;
  @PrimaryColumn('text') key!: string;
  /** SecretCipher text (`v1.<iv>.<tag>.<data>`) when `sealed`; plain only in rows stored before sealing, until the gateway's start seals them. */
  @Column('text') value!: string;
  @Column('boolean') sealed!: boolean;
  @Column('timestamptz') updated_at!: Date;
}

@Entity({ name: 'usage_limits', schema: GATEWAY_SCHEMA })
export class UsageLimitEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid') workspace_id!: string;
  @Column('text') limit_type!: 'monthly_traces';
  @Column('bigint', { transformer: bigintNumber }) limit_value!: number;
  @Column('timestamptz') created_at!: Date;
  @Column('timestamptz') updated_at!: Date;
}
