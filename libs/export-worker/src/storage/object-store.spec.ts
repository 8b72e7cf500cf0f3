import { Readable } from 'node:stream';
import { OutboundPolicy, type Resolver } from '@th/platform';
import { startConnectionCounter, type ConnectionCounter } from '@th/testing';
import { objectStoreFor } from './object-store';

/**
 * The export runner's path: a destination saved earlier is written to later, when its name may resolve elsewhere.
 * A TCP server on 127.0.0.1 counts connections; the policy's resolver is the seam that plays the DNS answers.
 */
describe('ObjectStore connections go through the outbound policy', () => {
  let counter: ConnectionCounter;
  let port: number;
  const connections = () => counter.connections();
  beforeAll(async () => {
    counter = await startConnectionCounter();
    port = counter.port;
  });
  afterAll(() => counter.close());

  const creds = { access_key_id: 'a', secret_access_key: 'b' };
  const upload = async (endpoint: string, policy: OutboundPolicy) => {
    const store = objectStoreFor({ bucket_name: 'b', prefix: '', region: 'us-east-1', endpoint_url: endpoint }, creds, policy);
    try {
      return await store.upload('k.parquet', Readable.from([Buffer.from('x')])).then(() => null, (e: Error) => e);
    } finally {
      store.close();
    }
  };

  it('an upload to a saved loopback endpoint is refused before connecting', async () => {
    const before = connections();
    expect(await upload(`http://127.0.0.1:${port}`, new OutboundPolicy(''))).toMatchObject({ message: expect.stringContaining('does not call') });
    expect(connections()).toBe(before);
  });

  it('DNS rebinding: a name that was public when the destination was saved and is 127.0.0.1 now is refused before connecting', async () => {
    let calls = 0;
    const rebinding: Resolver = async () => [{ address: calls++ === 0 ? '93.184.215.14' : '127.0.0.1', family: 4 }];
    const policy = new OutboundPolicy('', rebinding);
    await policy.check(`http://s3.example:${port}`); // what saving the destination checked
    const before = connections();
    expect(await upload(`http://s3.example:${port}`, policy)).toMatchObject({ message: expect.stringContaining('does not call') });
    expect(connections()).toBe(before);
  });

  it('an allowed endpoint is connected to (the policy does not just refuse everything)', async () => {
    const before = connections();
    expect(await upload(`http://127.0.0.1:${port}`, new OutboundPolicy(`127.0.0.1:${port}`))).toBeInstanceOf(Error); // the server hangs up
    expect(connections()).toBeGreaterThan(before);
  });
});
