import type { Dataset, DatasetDataType, Example } from '@th/contracts';
import type { DatasetRow, ExampleRow } from './datasets.store';

export function presentDataset(d: DatasetRow): Dataset {
  const metadata = d.extra && typeof d.extra.metadata === 'object' && d.extra.metadata !== null ? (d.extra.metadata as Record<string, unknown>) : null;
  return {
    id: d.id,
    tenant_id: d.tenant_id,
    name: d.name,
    description: d.description,
    created_at: d.created_at.toISOString(),
    modified_at: d.modified_at.toISOString(),
    data_type: d.data_type as DatasetDataType,
    inputs_schema_definition: d.inputs_schema_definition,
    outputs_schema_definition: d.outputs_schema_definition,
    externally_managed: d.externally_managed,
    extra: d.extra,
    metadata,
    example_count: d.example_count,
    session_count: d.session_count,
    last_session_start_time: d.last_session_start_time ? new Date(d.last_session_start_time).toISOString() : null,
    created_by_upload: d.created_by_upload,
  };
}

/**
 * Splits are shown both as `split` and, where the SDK and UI read them, as `metadata.dataset_split`. Attachments
 * are shown as `attachment_urls` when `signUrl` is given (signed download paths), else as null.
 */
export function presentExample(e: ExampleRow, signUrl?: (blobId: string) => string): Example {
  const attachments = e.attachments && signUrl ? Object.entries(e.attachments).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) : [];
  return {
    id: e.id,
    dataset_id: e.dataset_id,
    inputs: e.inputs,
    outputs: e.outputs,
    metadata: { ...(e.metadata ?? {}), dataset_split: e.splits },
    split: e.splits,
    source_run_id: e.source_run_id,
    created_at: e.created_at.toISOString(),
    modified_at: e.modified_at.toISOString(),
    attachment_urls:
      attachments.length > 0 && signUrl
        ? Object.fromEntries(attachments.map(([name, a]) => [`attachment.${name}`, { presigned_url: signUrl(a.blob_id), mime_type: a.mime_type }]))
        : null,
  };
}

/** A split name or list (or `metadata.dataset_split`) as a sorted, de-duplicated list; `base` when none. */
export function normalizeSplits(split: string | string[] | null | undefined, metadata?: Record<string, unknown> | null): string[] {
  let raw: unknown = split;
  if (raw == null && metadata && metadata.dataset_split != null) raw = metadata.dataset_split;
  const list = (Array.isArray(raw) ? raw : raw == null ? [] : [raw]).filter((s): s is string => typeof s === 'string' && s.length > 0);
  return list.length === 0 ? ['base'] : [...new Set(list)].sort();
}

/** Metadata as stored: without `dataset_split`, which lives in the splits column. */
export function storedMetadata(metadata: Record<string, unknown> | null | undefined): Record<string, unknown> | null {
  if (metadata == null) return null;
  const { dataset_split: _ignored, ...rest } = metadata;
  void _ignored;
  return rest;
}
