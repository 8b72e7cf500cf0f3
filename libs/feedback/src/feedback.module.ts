import { DynamicModule, Module, type Type } from '@nestjs/common';
import { FeedbackConfigsController, FeedbackReadController, FeedbackTokensController, FeedbackWriteController } from './feedback.controller';
import { FeedbackConfigRepository } from './feedback-config.repository';
import { FeedbackConfigService } from './feedback-config.service';
import { FeedbackQueryService } from './feedback-query.service';
import { FeedbackRepository } from './feedback.repository';
import { FeedbackService } from './feedback.service';
import { FeedbackWriterService } from './feedback-writer.service';
import { FeedbackTokenRepository } from './feedback-token.repository';
import { FeedbackTokenService } from './feedback-token.service';
import { FeedbackWriterConsumer } from './feedback-writer.consumer';
import { FEEDBACK_OPTIONS, type FeedbackOptions } from './feedback.options';

/**
 * Feedback: writes and the workspace's feedback configs (ingest), reads (query) and the writer role,
 * each switched on by the host.
 * Needs EventBus and ClickHouse from the host module.
 */
@Module({})
export class FeedbackModule {
  static forRoot(options: FeedbackOptions): DynamicModule {
    const controllers: Type<unknown>[] = [];
    if (options.writes) controllers.push(FeedbackTokensController, FeedbackWriteController, FeedbackConfigsController);
    if (options.reads) controllers.push(FeedbackReadController);
    if (options.writer) controllers.push(FeedbackWriterConsumer);
    return {
      module: FeedbackModule,
      controllers,
      providers: [{ provide: FEEDBACK_OPTIONS, useValue: options }, FeedbackRepository, FeedbackConfigRepository, FeedbackConfigService, FeedbackService, FeedbackQueryService, FeedbackWriterService, FeedbackTokenRepository, FeedbackTokenService],
      exports: [FeedbackConfigService, FeedbackService, FeedbackQueryService, FeedbackWriterService],
    };
  }
}
