import { Injectable } from '@nestjs/common';
import { feedbackFromEvent, type Feedback, type FeedbackListQuery, type Identity } from '@th/contracts';
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
    return (await this.repo.list(identity, q)).map(feedbackFromEvent);
  }
}
