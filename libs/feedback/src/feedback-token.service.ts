import { Injectable } from '@nestjs/common';
import { createHash, randomUUID } from 'node:crypto';
import { feedbackCreateSchema, type Feedback, type FeedbackFromToken, type FeedbackToken, type FeedbackTokenCreate, type FeedbackTokenListQuery, type Identity, feedbackFromEvent } from '@th/contracts';
import { gone, notFound, parseOrThrow } from '@th/platform';
import { FeedbackConfigService } from './feedback-config.service';
import { FeedbackRepository } from './feedback.repository';
import { FeedbackService } from './feedback.service';
import { FeedbackTokenRepository } from './feedback-token.repository';

const DEFAULT_LIFETIME_MS = 3 * 3_600_000;
const hashOf = (token: string): string => createHash('sha256').update(token.toLowerCase()).digest('hex');
const uuidOfHash = (h: string): string => `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;

/**
 * Presigned feedback: a key holder issues a token for (run, feedback key); whoever holds the token adds
 * that feedback without a key until it expires. The token is a random UUID (122 random bits) and only
 * its hash is stored.
 */
@Injectable()
export class FeedbackTokenService {
  constructor(
    private readonly tokens: FeedbackTokenRepository,
    private readonly runs: FeedbackRepository,
    private readonly feedback: FeedbackService,
    private readonly configs: FeedbackConfigService,
  ) {}

  /** `tokenBaseUrl` is the address the token's URL starts with: the caller's own /feedback/tokens. */
  async create(identity: Identity, items: FeedbackTokenCreate[], tokenBaseUrl: string): Promise<FeedbackToken[]> {
    for (const item of items) {
      // Another workspace's run is as unknown as a free id.
      if (!(await this.runs.findRunLocation(identity, item.run_id))) throw notFound(`Run ${item.run_id}`);
    }
    const now = Date.now();
    const issued = items.map((item) => {
      const token = randomUUID();
      const expires_at = new Date(item.expires_at !== null ? Date.parse(item.expires_at) : now + (item.expires_in ?? DEFAULT_LIFETIME_MS));
      return { token, item, expires_at };
    });
    await this.tokens.insert(
      issued.map(({ token, item, expires_at }) => ({
        token_hash: hashOf(token),
        tenant_id: identity.tenant_id,
        run_id: item.run_id,
        feedback_key: item.feedback_key,
        feedback_config: item.feedback_config,
        expires_at,
      })),
    );
    return issued.map(({ token, expires_at }) => ({ id: token, url: `${tokenBaseUrl}/${token}`, expires_at: expires_at.toISOString() }));
  }

  /**
   * A run's live tokens in the published shape. Only hashes are stored, so a listed token cannot be used:
   * its id is the first 128 bits of the hash (stable, not the token) and its url is empty.
   */
  async list(identity: Identity, q: FeedbackTokenListQuery): Promise<FeedbackToken[]> {
    const rows = await this.tokens.listLiveForRun(identity, q.run_id, q);
    return rows.map((r) => ({ id: uuidOfHash(r.token_hash), url: '', expires_at: r.expires_at.toISOString() }));
  }

  /** Adds the token's feedback: unknown tokens 404, expired ones 410; the content is checked like POST /feedback's. */
  async submit(token: string, body: FeedbackFromToken): Promise<Feedback> {
    const stored = await this.tokens.findByHash(hashOf(token));
    if (!stored) throw notFound('Feedback token');
    // An unreadable expiry counts as expired.
    if (!(stored.expires_at.getTime() > Date.now())) throw gone(`The feedback token expired at ${stored.expires_at.toISOString()}`);
    const f = parseOrThrow(
      feedbackCreateSchema,
      {
        run_id: stored.run_id,
        key: stored.feedback_key,
        score: body.score,
        value: body.value,
        comment: body.comment,
        correction: body.correction,
        feedback_config: stored.feedback_config,
        feedback_source: { type: 'app', metadata: body.metadata ?? null },
      },
      ['body'],
    );
    await this.configs.enforce(stored.tenant_id, f);
    const [event] = await this.feedback.submit({ tenant_id: stored.tenant_id }, [f]);
    return feedbackFromEvent(event);
  }
}
