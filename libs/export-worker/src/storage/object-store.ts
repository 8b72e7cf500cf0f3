import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { DeleteObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { ExportDestinationConfig, ExportDestinationCredentials } from '@th/contracts';
import { badRequest, maskUrlCredentials } from '@th/platform';

export interface ObjectStoreTarget {
  config: { bucket_name: string; prefix: string; region: string | null; endpoint_url: string | null };
  credentials: ExportDestinationCredentials;
}

/** One S3-compatible bucket with the destination's credentials. */
export class ObjectStore {
  readonly client: S3Client;
  constructor(private readonly target: ObjectStoreTarget) {
    const { config, credentials } = target;
    this.client = new S3Client({
      region: config.region || 'us-east-1',
      ...(config.endpoint_url ? { endpoint: config.endpoint_url, forcePathStyle: true } : {}),
      credentials: {
        accessKeyId: credentials.access_key_id,
        secretAccessKey: credentials.secret_access_key,
        ...(credentials.session_token ? { sessionToken: credentials.session_token } : {}),
      },
      // Checksums only where S3 requires them: several S3-compatible stores reject the newer checksum headers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
    });
  }

  get bucket(): string {
    return this.target.config.bucket_name;
  }

  /** The object key under the destination's prefix. */
  key(path: string): string {
    return this.target.config.prefix ? `${this.target.config.prefix}/${path}` : path;
  }

  /**
   * Proves the destination works before it is saved: writes a small object with these credentials and
   * removes it. Failures name what failed (bucket missing, access denied, endpoint unreachable).
   */
  async validate(): Promise<void> {
    const key = this.key(`.tracehouse-write-check-${randomUUID()}`);
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: 'tracehouse destination check\n' }));
    } catch (err) {
      throw describeFailure(err, this.bucket, this.target.config.endpoint_url, 'write a test object');
    }
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (err) {
      throw describeFailure(err, this.bucket, this.target.config.endpoint_url, 'delete the test object');
    }
  }

  /** Streams a body into one object with multipart uploads; a failed or aborted upload leaves no object. */
  async upload(key: string, body: Readable, signal?: AbortSignal): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: body, ContentType: 'application/vnd.apache.parquet' },
      partSize: 8 * 1024 * 1024,
      queueSize: 2,
      leavePartsOnError: false,
    });
    const onAbort = () => void upload.abort().catch(() => undefined);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await upload.done();
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  close(): void {
    this.client.destroy();
  }
}

export function objectStoreFor(config: ExportDestinationConfig | ObjectStoreTarget['config'], credentials: ExportDestinationCredentials): ObjectStore {
  return new ObjectStore({
    config: { bucket_name: config.bucket_name, prefix: config.prefix ?? '', region: config.region ?? null, endpoint_url: config.endpoint_url ?? null },
    credentials,
  });
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'TimeoutError']);

function describeFailure(err: unknown, bucket: string, endpoint: string | null, action: string): Error {
  const where = endpoint === null ? 'the default S3 endpoint' : maskUrlCredentials(endpoint);
  if (err instanceof S3ServiceException) {
    const status = err.$metadata?.httpStatusCode;
    if (err.name === 'NoSuchBucket' || status === 404) return badRequest(`Destination validation failed: bucket '${bucket}' does not exist at ${where}`);
    if (['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied', 'InvalidToken', 'ExpiredToken'].includes(err.name) || status === 403 || status === 401) {
      return badRequest(`Destination validation failed: access denied to bucket '${bucket}' (${err.name}); could not ${action}`);
    }
    return badRequest(`Destination validation failed: could not ${action} in bucket '${bucket}': ${err.name} (${err.message})`);
  }
  const code = (err as { code?: string; name?: string } | null)?.code ?? (err as { name?: string } | null)?.name ?? '';
  const message = err instanceof Error ? err.message : String(err);
  if (NETWORK_CODES.has(code) || /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|socket hang up|timed? ?out/i.test(message)) {
    return badRequest(`Destination validation failed: endpoint ${where} is unreachable (${message})`);
  }
  return badRequest(`Destination validation failed: could not ${action} in bucket '${bucket}': ${message}`);
}
