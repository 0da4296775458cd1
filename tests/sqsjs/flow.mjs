// Drives the SQS door with the AWS SDK for JavaScript v3 (@aws-sdk/client-sqs, JSON 1.0
// protocol; it checks the MD5s of bodies and message attributes itself). Run by
// scripts/sqs-js.sh with SQS_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and PROJECT.
import assert from "node:assert/strict";
import * as S from "@aws-sdk/client-sqs";

const endpoint = process.env.SQS_ENDPOINT;
const project = process.env.PROJECT;
const c = new S.SQSClient({ endpoint, region: "sa-east-1" });
const send = (cmd) => c.send(cmd);

const { QueueUrl: dlq } = await send(new S.CreateQueueCommand({ QueueName: "js-dlq" }));
const { Attributes: da } = await send(new S.GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ["QueueArn"] }));
assert.equal(da.QueueArn, `arn:aws:sqs:sa-east-1:${project}:js-dlq`);
const { QueueUrl: q } = await send(new S.CreateQueueCommand({
  QueueName: "js", tags: { team: "js" },
  Attributes: { VisibilityTimeout: "50", RedrivePolicy: JSON.stringify({ deadLetterTargetArn: da.QueueArn, maxReceiveCount: 2 }) },
}));
assert.equal(q, `${endpoint}/sqs/${project}/js`);
await assert.rejects(send(new S.CreateQueueCommand({ QueueName: "js", Attributes: { VisibilityTimeout: "51" } })), (e) => e instanceof S.QueueNameExists);
assert.equal((await send(new S.GetQueueUrlCommand({ QueueName: "js" }))).QueueUrl, q);
await assert.rejects(send(new S.GetQueueUrlCommand({ QueueName: "missing" })), (e) => e instanceof S.QueueDoesNotExist);
assert.equal((await send(new S.ListQueuesCommand({ QueueNamePrefix: "js" }))).QueueUrls.length, 2);
await send(new S.SetQueueAttributesCommand({ QueueUrl: q, Attributes: { DelaySeconds: "0" } }));
assert.equal((await send(new S.GetQueueAttributesCommand({ QueueUrl: q, AttributeNames: ["All"] }))).Attributes.VisibilityTimeout, "50");
await send(new S.TagQueueCommand({ QueueUrl: q, Tags: { env: "ci" } }));
await send(new S.UntagQueueCommand({ QueueUrl: q, TagKeys: ["team"] }));
assert.deepEqual((await send(new S.ListQueueTagsCommand({ QueueUrl: q }))).Tags, { env: "ci" });
assert.deepEqual((await send(new S.ListDeadLetterSourceQueuesCommand({ QueueUrl: dlq }))).queueUrls, [q]);

const attrs = {
  s: { DataType: "String", StringValue: "ü" },
  n: { DataType: "Number", StringValue: "1e3" },
  b: { DataType: "Binary", BinaryValue: new Uint8Array([0, 255, 9]) },
  c: { DataType: "String.custom", StringValue: "x" },
};
const sent = await send(new S.SendMessageCommand({ QueueUrl: q, MessageBody: "js ✓", MessageAttributes: attrs }));
const batch = await send(new S.SendMessageBatchCommand({ QueueUrl: q, Entries: [
  { Id: "1", MessageBody: "one", MessageAttributes: { k: { DataType: "String", StringValue: "v" } } },
  { Id: "2", MessageBody: "two" },
] }));
assert.equal(batch.Successful.length, 2);
const r = await send(new S.ReceiveMessageCommand({ QueueUrl: q, MaxNumberOfMessages: 10, MessageAttributeNames: ["All"], MessageSystemAttributeNames: ["All"] }));
assert.equal(r.Messages.length, 3);
const m = r.Messages.find((x) => x.MessageId === sent.MessageId);
assert.equal(m.Body, "js ✓");
assert.equal(m.MD5OfMessageAttributes, sent.MD5OfMessageAttributes);
assert.deepEqual([...m.MessageAttributes.b.BinaryValue], [0, 255, 9]);
assert.equal(m.Attributes.ApproximateReceiveCount, "1");
await send(new S.ChangeMessageVisibilityCommand({ QueueUrl: q, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 }));
const others = r.Messages.filter((x) => x !== m);
const cv = await send(new S.ChangeMessageVisibilityBatchCommand({ QueueUrl: q, Entries: others.map((x, i) => ({ Id: `e${i}`, ReceiptHandle: x.ReceiptHandle, VisibilityTimeout: 30 })) }));
assert.equal(cv.Successful.length, 2);
const del = await send(new S.DeleteMessageBatchCommand({ QueueUrl: q, Entries: others.map((x, i) => ({ Id: `d${i}`, ReceiptHandle: x.ReceiptHandle })) }));
assert.equal(del.Successful.length, 2);
// The released message comes back once more, then goes to the dead-letter queue.
const again = await send(new S.ReceiveMessageCommand({ QueueUrl: q }));
assert.equal(again.Messages.length, 1);
await send(new S.ChangeMessageVisibilityCommand({ QueueUrl: q, ReceiptHandle: again.Messages[0].ReceiptHandle, VisibilityTimeout: 0 }));
assert.equal((await send(new S.ReceiveMessageCommand({ QueueUrl: q }))).Messages?.length ?? 0, 0);
const dead = await send(new S.ReceiveMessageCommand({ QueueUrl: dlq, WaitTimeSeconds: 5, MessageSystemAttributeNames: ["DeadLetterQueueSourceArn"] }));
assert.equal(dead.Messages[0].Attributes.DeadLetterQueueSourceArn, `arn:aws:sqs:sa-east-1:${project}:js`);
await send(new S.DeleteMessageCommand({ QueueUrl: dlq, ReceiptHandle: dead.Messages[0].ReceiptHandle }));

const { QueueUrl: f } = await send(new S.CreateQueueCommand({ QueueName: "js.fifo", Attributes: { FifoQueue: "true" } }));
await send(new S.SendMessageCommand({ QueueUrl: f, MessageBody: "f", MessageGroupId: "g", MessageDeduplicationId: "d" }));
const fr = await send(new S.ReceiveMessageCommand({ QueueUrl: f, ReceiveRequestAttemptId: "a1", MessageSystemAttributeNames: ["MessageGroupId", "MessageDeduplicationId"] }));
assert.equal(fr.Messages[0].Attributes.MessageGroupId, "g");
assert.equal(fr.Messages[0].Attributes.MessageDeduplicationId, "d");
await send(new S.DeleteMessageCommand({ QueueUrl: f, ReceiptHandle: fr.Messages[0].ReceiptHandle }));

await send(new S.PurgeQueueCommand({ QueueUrl: q }));
for (const u of [f, q]) await send(new S.DeleteQueueCommand({ QueueUrl: u }));
// The dead-letter queue was named by q, which is gone now.
await send(new S.DeleteQueueCommand({ QueueUrl: dlq }));
console.log("sqs-js: every flow passed");
