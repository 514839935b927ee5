#!/usr/bin/env node
// kafkajs peer for the e2e tests (tests/e2e/test_interop_kafkajs.py).
//
//   node produce_consume.js <mode> <bootstrap host:port[,host:port...]> <topic>
//
// mode: "produce" (create the topic, produce the records read as JSON from stdin),
//       "consume" (read the topic from the beginning with a consumer group until
//                  EXPECT records arrived), or "both".
// env:  PARTITIONS (default 3), COMPRESSION ("none" | "gzip"), EXPECT (record count),
//       GROUP (consumer group id), TIMEOUT_MS (default 60000);
//       security (tests/security): SSL_CA (PEM file: connect with TLS), SSL_CERT + SSL_KEY (client
//       certificate), SASL_MECHANISM ("plain" | "scram-sha-256" | "scram-sha-512" | "oauthbearer"),
//       SASL_USERNAME, SASL_PASSWORD.
// stdin (produce): [{"key": b64|null, "value": b64, "headers": [[k, b64], ...], "partition": n}, ...]
// stdout: one JSON object {"produced": [...], "consumed": [...]}; keys, values and header
//         values are base64.  Logs go to stderr.
'use strict';

const { Kafka, CompressionTypes, logLevel } = require('kafkajs');

const [mode, bootstrap, topic] = process.argv.slice(2);
const partitions = parseInt(process.env.PARTITIONS || '3', 10);
const compression = (process.env.COMPRESSION || 'none') === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;
const expect = parseInt(process.env.EXPECT || '0', 10);
const groupId = process.env.GROUP || `kafkajs-e2e-${topic}`;
const timeoutMs = parseInt(process.env.TIMEOUT_MS || '60000', 10);

const stderrLogger = () => ({ namespace, level, label, log }) => {
  process.stderr.write(`${label} ${namespace} ${log.message} ${JSON.stringify(log)}\n`);
};

function security() {
  const env = process.env;
  const out = {};
  if (env.SSL_CA) {
    const fs = require('fs');
    out.ssl = { ca: [fs.readFileSync(env.SSL_CA, 'utf-8')] };
    if (env.SSL_CERT) {
      out.ssl.cert = fs.readFileSync(env.SSL_CERT, 'utf-8');
      out.ssl.key = fs.readFileSync(env.SSL_KEY, 'utf-8');
    }
  }
  if (env.SASL_MECHANISM === 'oauthbearer') {
    out.sasl = { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: 'header.payload.signature' }) };
  } else if (env.SASL_MECHANISM) {
    out.sasl = { mechanism: env.SASL_MECHANISM, username: env.SASL_USERNAME, password: env.SASL_PASSWORD };
  }
  return out;
}

const kafka = new Kafka({
  clientId: 'kbroker-e2e-kafkajs',
  brokers: bootstrap.split(','),
  logLevel: logLevel.WARN,
  logCreator: stderrLogger,
  retry: { retries: 5 },
  ...security(),
});

const b64 = (buf) => (buf === null || buf === undefined ? null : Buffer.from(buf).toString('base64'));
const unb64 = (s) => (s === null ? null : Buffer.from(s, 'base64'));

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '[]');
}

async function produce(records) {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }], waitForLeaders: true });
  await admin.disconnect();

  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const messages = records.map((r) => {
    const headers = {};
    for (const [k, v] of r.headers) headers[k] = unb64(v);
    return { key: unb64(r.key), value: unb64(r.value), headers, partition: r.partition };
  });
  const meta = await producer.send({ topic, messages, acks: -1, compression });
  await producer.disconnect();
  // offsets: per partition, the batch's base offset plus the message's index in that partition
  const base = {};
  for (const m of meta) base[m.partition] = parseInt(m.baseOffset, 10);
  const seen = {};
  return records.map((r) => {
    const i = seen[r.partition] || 0;
    seen[r.partition] = i + 1;
    return { partition: r.partition, offset: base[r.partition] + i };
  });
}

async function consume() {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const out = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${out.length} of ${expect} records after ${timeoutMs} ms`)), timeoutMs);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        const headers = Object.entries(message.headers || {}).map(([k, v]) => [k, b64(v)]);
        out.push({ partition, offset: parseInt(message.offset, 10), key: b64(message.key), value: b64(message.value), headers });
        if (out.length >= expect) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  return out;
}

(async () => {
  const result = { produced: [], consumed: [] };
  if (mode === 'produce' || mode === 'both') result.produced = await produce(await readStdin());
  if (mode === 'consume' || mode === 'both') result.consumed = await consume();
  process.stdout.write(JSON.stringify(result) + '\n');
})().catch((err) => {
  process.stderr.write(`kafkajs peer failed: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
