import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { DeleteObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { ExportDestinationConfig, ExportDestinationCredentials } from '@th/contracts';
import { DomainError, ErrorCode, OutboundRefused, ValidationFailed, badRequest, maskUrlCredentials, type OutboundPolicy } from '@th/platform';

export interface ObjectStoreTarget {
  config: { bucket_name: string; prefix: string; region: string | null; endpoint_url: string | null };
  credentials: ExportDestinationCredentials;
}

/** Bound on opening one connection to the store (an address that drops packets must not hold a request for minutes). */
const CONNECT_TIMEOUT_MS = 5_000;
/** Bound on a connection that stays silent (an upload part keeps it busy, so this is not a bound on the upload). */
const IDLE_TIMEOUT_MS = 60_000;
/** Bound on each request of the validation, retries included: the tenant's POST waits for it. */
const VALIDATE_TIMEOUT_MS = 15_000;

/** One S3-compatible bucket with the destination's credentials; every connection goes through the outbound policy. */
export class ObjectStore {
  readonly client: S3Client;
  constructor(
    private readonly target: ObjectStoreTarget,
    private readonly policy: OutboundPolicy,
  ) {
    const { config, credentials } = target;
    const agents = policy.agents({ keepAlive: true });
    this.client = new S3Client({
      requestHandler: { httpAgent: agents.http, httpsAgent: agents.https, connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: IDLE_TIMEOUT_MS },
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
   * Proves the destination works before it is saved: checks the endpoint against the outbound policy (a 422 on
   * body.config.endpoint_url), then writes a small object with these credentials and removes it. Failures the
   * store answered name what failed (bucket missing, access denied); every connection failure reads the same.
   */
  async validate(): Promise<void> {
    if (this.target.config.endpoint_url) {
      try {
        await this.policy.check(this.target.config.endpoint_url);
      } catch (err) {
        if (!(err instanceof OutboundRefused)) throw err;
        throw new ValidationFailed([{ loc: ['body', 'config', 'endpoint_url'], msg: `endpoint_url ${err.message}`, type: 'value_error' }]);
      }
    }
    const key = this.key(`.tracehouse-write-check-${randomUUID()}`);
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: 'tracehouse destination check\n' }), { abortSignal: AbortSignal.timeout(VALIDATE_TIMEOUT_MS) });
    } catch (err) {
      throw describeFailure(err, this.bucket, this.target.config.endpoint_url, 'write a test object');
    }
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: AbortSignal.timeout(VALIDATE_TIMEOUT_MS) });
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

export function objectStoreFor(
  config: ExportDestinationConfig | ObjectStoreTarget['config'],
  credentials: ExportDestinationCredentials,
  policy: OutboundPolicy,
): ObjectStore {
  return new ObjectStore(
    {
      config: { bucket_name: config.bucket_name, prefix: config.prefix ?? '', region: config.region ?? null, endpoint_url: config.endpoint_url ?? null },
      credentials,
    },
    policy,
  );
}

/** The one answer for a store that could not be reached, whatever the reason (refused, reset, timed out, not resolved, refused by the policy at connect time): telling them apart would let a tenant map ports. */
export const UNREACHABLE = 'Destination validation failed: could not reach the destination';

function describeFailure(err: unknown, bucket: string, endpoint: string | null, action: string): Error {
  const where = endpoint === null ? 'the default S3 endpoint' : maskUrlCredentials(endpoint);
  // Only an error the store answered carries an HTTP status; anything else never reached it.
  const status = err instanceof S3ServiceException ? err.$metadata?.httpStatusCode : undefined;
  if (err instanceof S3ServiceException && status !== undefined) {
    if (err.name === 'NoSuchBucket' || status === 404) return badRequest(`Destination validation failed: bucket '${bucket}' does not exist at ${where}`);
    if (['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied', 'InvalidToken', 'ExpiredToken'].includes(err.name) || status === 403 || status === 401) {
      return badRequest(`Destination validation failed: access denied to bucket '${bucket}' (${err.name}); could not ${action}`);
    }
    return badRequest(`Destination validation failed: could not ${action} in bucket '${bucket}': ${err.name} (${err.message})`);
  }
  return new DomainError(ErrorCode.BadRequest, UNREACHABLE, undefined, { cause: err });
}
