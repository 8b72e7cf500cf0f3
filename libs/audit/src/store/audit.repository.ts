import type { DataSource, EntityManager } from 'typeorm';

export interface StoredEventRow {
  chain_key: string;
  seq: number;
  id: string;
  /** The event time to the microsecond, as PostgreSQL keeps it (the paging key). */
  time_key: string;
  operation: string;
  organization_id: string | null;
  workspace_id: string | null;
  status: string;
  record: string;
  prev_hash: string;
  hash: string;
  stored_at: Date;
}

export interface ChainHead {
  chain_key: string;
  head_seq: number;
  head_hash: string;
  anchor_seq: number;
  anchor_hash: string;
}

export interface NewEvent {
  seq: number;
  id: string;
  time: string;
  operation: string;
  status: string;
  organization_id: string | null;
  workspace_id: string | null;
  record: string;
  prev_hash: string;
  hash: string;
}

export interface ListFilter {
  organization_id: string;
  /** Inclusive. */
  start?: string;
  /** Exclusive. */
  end?: string;
  /** Nothing older is served, whether or not retention has removed it yet. */
  notBefore: Date;
  operations?: string[];
  after?: { time: string; id: string };
  limit: number;
}

const EVENT_COLUMNS = `"chain_key", "seq"::float8 AS "seq", "id",
  to_char("time" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS "time_key",
  "operation", "organization_id", "workspace_id", "status", "record", "prev_hash", "hash", "stored_at"`;

const toHead = (r: Record<string, unknown>): ChainHead => ({
  chain_key: r.chain_key as string,
  head_seq: Number(r.head_seq),
  head_hash: r.head_hash as string,
  anchor_seq: Number(r.anchor_seq),
  anchor_hash: r.anchor_hash as string,
});

/** The only code that speaks SQL to the audit schema. Reads are bound to an organization (its chain). */
export class AuditRepository {
  constructor(private readonly ds: DataSource) {}

  transaction<T>(fn: (tx: AuditTx) => Promise<T>): Promise<T> {
    return this.ds.transaction((m) => fn(new AuditTx(m)));
  }

  async list(f: ListFilter): Promise<StoredEventRow[]> {
    const where = ['"organization_id" = $1', '"time" >= $2'];
    const params: unknown[] = [f.organization_id, f.notBefore];
    if (f.start) where.push(`"time" >= $${params.push(f.start)}`);
    if (f.end) where.push(`"time" < $${params.push(f.end)}`);
    if (f.operations?.length) where.push(`"operation" = ANY($${params.push(f.operations)})`);
    if (f.after) where.push(`("time", "id") > ($${params.push(f.after.time)}::timestamptz, $${params.push(f.after.id)})`);
    const limit = params.push(f.limit);
    return (await this.ds.query(
      `SELECT ${EVENT_COLUMNS} FROM "audit"."events" WHERE ${where.join(' AND ')} ORDER BY "time", "id" LIMIT $${limit}`,
      params,
    )) as StoredEventRow[];
  }

  async head(chainKey: string): Promise<ChainHead | null> {
    const rows = (await this.ds.query(`SELECT * FROM "audit"."chains" WHERE "chain_key" = $1`, [chainKey])) as Record<string, unknown>[];
    return rows.length ? toHead(rows[0]) : null;
  }

  async chainKeys(): Promise<string[]> {
    const rows = (await this.ds.query(`SELECT "chain_key" FROM "audit"."chains" ORDER BY "chain_key"`)) as { chain_key: string }[];
    return rows.map((r) => r.chain_key);
  }

  /** A chain's events with seq in (afterSeq, uptoSeq], in chain order. */
  async chainPage(chainKey: string, afterSeq: number, uptoSeq: number, limit: number): Promise<StoredEventRow[]> {
    return (await this.ds.query(
      `SELECT ${EVENT_COLUMNS} FROM "audit"."events" WHERE "chain_key" = $1 AND "seq" > $2 AND "seq" <= $3 ORDER BY "seq" LIMIT $4`,
      [chainKey, afterSeq, uptoSeq, limit],
    )) as StoredEventRow[];
  }

  /** Chains whose oldest kept event is older than the cutoff: those retention has something to remove from. */
  async chainsWithExpired(cutoff: Date): Promise<string[]> {
    const rows = (await this.ds.query(
      `SELECT c."chain_key" FROM "audit"."chains" c
       JOIN "audit"."events" e ON e."chain_key" = c."chain_key" AND e."seq" = c."anchor_seq" + 1
       WHERE e."time" < $1 ORDER BY c."chain_key"`,
      [cutoff],
    )) as { chain_key: string }[];
    return rows.map((r) => r.chain_key);
  }
}

/** Statements run inside one transaction. */
export class AuditTx {
  constructor(private readonly m: EntityManager) {}

  /** Locks the chain's head (creating the chain at its genesis), so appends to one chain are serial. */
  async lockChain(chainKey: string, genesis: string): Promise<ChainHead> {
    await this.m.query(
      `INSERT INTO "audit"."chains" ("chain_key", "head_seq", "head_hash", "anchor_seq", "anchor_hash") VALUES ($1, 0, $2, 0, $2)
       ON CONFLICT ("chain_key") DO NOTHING`,
      [chainKey, genesis],
    );
    const rows = (await this.m.query(`SELECT * FROM "audit"."chains" WHERE "chain_key" = $1 FOR UPDATE`, [chainKey])) as Record<string, unknown>[];
    return toHead(rows[0]);
  }

  /** Stored records among these ids (any chain), with their text, to tell a re-delivery from a clash. */
  async existing(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = (await this.m.query(`SELECT "id", "record" FROM "audit"."events" WHERE "id" = ANY($1)`, [ids])) as { id: string; record: string }[];
    return new Map(rows.map((r) => [r.id, r.record]));
  }

  async insert(chainKey: string, events: NewEvent[]): Promise<void> {
    // Bounded statements: PostgreSQL takes at most 65535 parameters (11 per event).
    for (let i = 0; i < events.length; i += 1000) await this.insertChunk(chainKey, events.slice(i, i + 1000));
  }

  private async insertChunk(chainKey: string, events: NewEvent[]): Promise<void> {
    const params: unknown[] = [];
    const tuples = events.map((e) => {
      const values = [chainKey, e.seq, e.id, e.time, e.operation, e.status, e.organization_id, e.workspace_id, e.record, e.prev_hash, e.hash];
      const start = params.length;
      params.push(...values);
      return `(${values.map((_, i) => `$${start + i + 1}`).join(',')})`;
    });
    await this.m.query(
      `INSERT INTO "audit"."events" ("chain_key", "seq", "id", "time", "operation", "status", "organization_id", "workspace_id", "record", "prev_hash", "hash")
       VALUES ${tuples.join(',')}`,
      params,
    );
  }

  async setHead(chainKey: string, seq: number, hash: string): Promise<void> {
    await this.m.query(`UPDATE "audit"."chains" SET "head_seq" = $2, "head_hash" = $3, "updated_at" = now() WHERE "chain_key" = $1`, [chainKey, seq, hash]);
  }

  /** The seq of the chain's first event at or after the cutoff; null when every event is older. */
  async firstSeqSince(chainKey: string, cutoff: Date): Promise<number | null> {
    const rows = (await this.m.query(`SELECT min("seq")::float8 AS "seq" FROM "audit"."events" WHERE "chain_key" = $1 AND "time" >= $2`, [chainKey, cutoff])) as {
      seq: number | null;
    }[];
    return rows[0]?.seq ?? null;
  }

  async hashAt(chainKey: string, seq: number): Promise<string | null> {
    const rows = (await this.m.query(`SELECT "hash" FROM "audit"."events" WHERE "chain_key" = $1 AND "seq" = $2`, [chainKey, seq])) as { hash: string }[];
    return rows[0]?.hash ?? null;
  }

  /**
   * Writes new hashes of a chain's events, its anchor and head (converting a chain to the keyed hash).
   * The append-only trigger lets UPDATE through only inside this statement's transaction (audit.rekey).
   */
  async rehash(chainKey: string, events: { seq: number; prev_hash: string; hash: string }[], anchorHash: string, headHash: string): Promise<void> {
    await this.m.query(`SET LOCAL audit.rekey = 'on'`);
    for (let i = 0; i < events.length; i += 1000) {
      const chunk = events.slice(i, i + 1000);
      await this.m.query(
        `UPDATE "audit"."events" e SET "prev_hash" = v."prev_hash", "hash" = v."hash"
         FROM unnest($2::bigint[], $3::text[], $4::text[]) AS v("seq", "prev_hash", "hash")
         WHERE e."chain_key" = $1 AND e."seq" = v."seq"`,
        [chainKey, chunk.map((e) => e.seq), chunk.map((e) => e.prev_hash), chunk.map((e) => e.hash)],
      );
    }
    await this.m.query(`SET LOCAL audit.rekey = 'off'`);
    await this.m.query(`UPDATE "audit"."chains" SET "anchor_hash" = $2, "head_hash" = $3, "updated_at" = now() WHERE "chain_key" = $1`, [chainKey, anchorHash, headHash]);
  }

  /** Removes the chain's prefix up to `uptoSeq` and makes that event's hash the new anchor. Retention only. */
  async removePrefix(chainKey: string, uptoSeq: number, anchorHash: string): Promise<number> {
    await this.m.query(`SET LOCAL audit.retention = 'on'`);
    // TypeORM answers a DELETE with [rows, rowCount].
    const [, removed] = (await this.m.query(`DELETE FROM "audit"."events" WHERE "chain_key" = $1 AND "seq" <= $2`, [chainKey, uptoSeq])) as [unknown[], number];
    await this.m.query(`SET LOCAL audit.retention = 'off'`);
    await this.m.query(`UPDATE "audit"."chains" SET "anchor_seq" = $2, "anchor_hash" = $3, "updated_at" = now() WHERE "chain_key" = $1`, [
      chainKey,
      uptoSeq,
      anchorHash,
    ]);
    return removed;
  }
}
