import { Injectable } from '@nestjs/common';
import { feedbackFromEvent, rollupFeedbackStats, type Feedback, type FeedbackListQuery, type FeedbackStats, type FeedbackStatsGroup, type Identity } from '@th/contracts';
import { notFound } from '@th/platform';
import { FeedbackRepository } from './feedback.repository';

/** Feedback reads (the query service's side). */
@Injectable()
export class FeedbackQueryService {
  constructor(private readonly repo: FeedbackRepository) {}

  async get(identity: Identity, id: string): Promise<Feedback> {
    const f = await this.repo.findById(identity, id);
    if (!f) throw notFound(`Feedback ${id}`);
    return feedbackFromEvent(f);
  }

  async list(identity: Identity, q: FeedbackListQuery): Promise<Feedback[]> {
    return (await this.repo.list(identity, q)).map((f) => feedbackFromEvent(f));
  }

  /** feedback_stats of each comparative experiment that has pairwise feedback (absent: none yet). */
  async comparativeStats(identity: Identity, ids: string[]): Promise<Map<string, FeedbackStats>> {
    const byExperiment = new Map<string, FeedbackStatsGroup[]>();
    for (const g of await this.repo.statsGroupsByComparativeExperiment(identity, ids)) {
      byExperiment.set(g.experiment, [...(byExperiment.get(g.experiment) ?? []), g]);
    }
    const out = new Map<string, FeedbackStats>();
    for (const [id, groups] of byExperiment) {
      const stats = rollupFeedbackStats(groups);
      if (stats) out.set(id, stats);
    }
    return out;
  }
}
