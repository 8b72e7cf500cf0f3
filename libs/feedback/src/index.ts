export * from './feedback.module';
export * from './feedback.options';
export * from './feedback.service';
export * from './feedback-config.service';
export * from './feedback-query.service';
export * from './feedback-writer.service';
export { feedbackRowJson, displayValue } from './feedback-row';
