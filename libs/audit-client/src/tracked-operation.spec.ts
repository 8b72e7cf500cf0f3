import { INTERCEPTORS_METADATA } from '@nestjs/common/constants';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { AuditClientModule } from './audit-client.module';
import type { Request } from 'express';
import { TRACKED_OPERATION, TrackedOperation, TrackedOperationInterceptor, trackedOperationOf } from './tracked-operation';

class Routes {
  @TrackedOperation()
  tracked(): void {}

  untracked(): void {}
}

describe('TrackedOperation', () => {
  it('marks the route and applies the interceptor to it alone', () => {
    expect(Reflect.getMetadata(TRACKED_OPERATION, Routes.prototype.tracked)).toBe(true);
    expect(Reflect.getMetadata(INTERCEPTORS_METADATA, Routes.prototype.tracked)).toEqual([TrackedOperationInterceptor]);
    expect(Reflect.getMetadata(INTERCEPTORS_METADATA, Routes.prototype.untracked)).toBeUndefined();
  });

  it('is not a global interceptor: routes without the mark go through no interceptor chain', () => {
    const providers = AuditClientModule.forRoot({ service: 'test' }).providers ?? [];
    expect(providers.some((p) => typeof p === 'object' && 'provide' in p && p.provide === APP_INTERCEPTOR)).toBe(false);
  });

  it("finds the operation in the route's table entry, by the path the router registered", () => {
    const req = (method: string, path: string) => ({ method, route: { path } }) as unknown as Request;
    expect(trackedOperationOf(req('PATCH', '/datasets/:dataset_id'))).toEqual({ operation: 'update_dataset', resourceType: 'dataset', resourceParam: 'dataset_id' });
    expect(trackedOperationOf(req('POST', '/api-key'))).toEqual({ operation: 'create_api_key' });
    expect(trackedOperationOf(req('GET', '/datasets/:dataset_id'))).toBeUndefined();
  });
});
