import { INTERCEPTORS_METADATA } from '@nestjs/common/constants';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { AuditClientModule } from './audit-client.module';
import { TRACKED_OPERATION, TrackedOperation, TrackedOperationInterceptor } from './tracked-operation';

class Routes {
  @TrackedOperation('create_dataset', { resourceType: 'dataset', resourceParam: 'id' })
  tracked(): void {}

  untracked(): void {}
}

describe('TrackedOperation', () => {
  it('marks the route and applies the interceptor to it alone', () => {
    expect(Reflect.getMetadata(TRACKED_OPERATION, Routes.prototype.tracked)).toEqual({ operation: 'create_dataset', resourceType: 'dataset', resourceParam: 'id' });
    expect(Reflect.getMetadata(INTERCEPTORS_METADATA, Routes.prototype.tracked)).toEqual([TrackedOperationInterceptor]);
    expect(Reflect.getMetadata(INTERCEPTORS_METADATA, Routes.prototype.untracked)).toBeUndefined();
  });

  it('is not a global interceptor: routes without the mark go through no interceptor chain', () => {
    const providers = AuditClientModule.forRoot({ service: 'test' }).providers ?? [];
    expect(providers.some((p) => typeof p === 'object' && 'provide' in p && p.provide === APP_INTERCEPTOR)).toBe(false);
  });
});
