import { Kafka, logLevel, Producer } from 'kafkajs';
import { KafkaServer, startKafka } from './kafka-server';

jest.setTimeout(120_000);

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe('startKafka (real KRaft broker)', () => {
  let server: KafkaServer | undefined;
  let producer: Producer | undefined;

  afterAll(async () => {
    await producer?.disconnect().catch(() => undefined);
    await server?.stop();
  });

  it('produces, consumes, survives a restart and produces again', async () => {
    const started = Date.now();
    server = await startKafka();
    const startupMs = Date.now() - started;
    expect(server.brokers).toBe(`127.0.0.1:${server.port}`);
    expect(startupMs).toBeLessThan(90_000);

    const kafka = new Kafka({ clientId: 'kafka-server-spec', brokers: [server.brokers], logLevel: logLevel.NOTHING });
    const topic = `spec-${Date.now()}`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();

    producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: [{ key: 'k1', value: 'before-restart' }] });

    const received: string[] = [];
    const consumer = kafka.consumer({ groupId: `${topic}-group` });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let gotFirst: () => void = () => undefined;
    const firstMessage = new Promise<void>((r) => (gotFirst = r));
    await consumer.run({
      eachMessage: async ({ message }) => {
        received.push(message.value?.toString() ?? '');
        gotFirst();
      },
    });
    await withTimeout(firstMessage, 30_000, 'no message consumed within 30 s');
    await consumer.disconnect();
    expect(received).toEqual(['before-restart']);

    await server.restart();

    // The same idempotent producer reconnects on its own once the broker is back.
    await producer.send({ topic, acks: -1, messages: [{ key: 'k2', value: 'after-restart' }] });

    const offsetsAdmin = kafka.admin();
    await offsetsAdmin.connect();
    const offsets = await offsetsAdmin.fetchTopicOffsets(topic);
    await offsetsAdmin.disconnect();
    expect(offsets).toHaveLength(1);
    expect(Number(offsets[0]?.high)).toBe(2);
  });
});
