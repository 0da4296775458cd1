"""Message actions: the ordinary paths (botocore checks every MD5 of bodies and attributes)."""
import json
import unittest

from sqsboto import SQSTest


class Messages(SQSTest):
    def test_send_receive_delete(self):
        url = self.create("msg")
        attrs = {
            "s": {"DataType": "String", "StringValue": "v"},
            "n": {"DataType": "Number", "StringValue": "12.5"},
            "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
            "c": {"DataType": "String.custom", "StringValue": "x"},
        }
        sent = self.sqs.send_message(QueueUrl=url, MessageBody="hello", MessageAttributes=attrs)
        msgs = self.receive(url, MessageAttributeNames=["All"], AttributeNames=["All"])
        self.assertEqual(len(msgs), 1)
        m = msgs[0]
        self.assertEqual(m["MessageId"], sent["MessageId"])
        self.assertEqual(m["Body"], "hello")
        self.assertEqual(m["MessageAttributes"], attrs)
        self.assertEqual(m["Attributes"]["ApproximateReceiveCount"], "1")
        self.assertIn("SentTimestamp", m["Attributes"])
        self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        self.assertEqual(self.receive(url), [])
        # SQS lets a handle's second delete through.
        self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])

    def test_batches(self):
        url = self.create("batch")
        out = self.sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": f"e{i}", "MessageBody": f"m{i}"} for i in range(3)])
        self.assertEqual(sorted(s["Id"] for s in out["Successful"]), ["e0", "e1", "e2"])
        msgs = self.receive_all(url, 3)
        self.assertEqual(sorted(m["Body"] for m in msgs), ["m0", "m1", "m2"])
        vis = self.sqs.change_message_visibility_batch(
            QueueUrl=url, Entries=[{"Id": f"v{i}", "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 60} for i, m in enumerate(msgs)]
        )
        self.assertEqual(len(vis["Successful"]), 3)
        deleted = self.sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": f"d{i}", "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)])
        self.assertEqual(sorted(s["Id"] for s in deleted["Successful"]), ["d0", "d1", "d2"])
        counts = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
        self.assertEqual(counts["Attributes"], {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"})

    def test_batch_entry_ids_must_be_distinct(self):
        url = self.create("distinct")
        with self.raises() as cm:
            self.sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "1"}, {"Id": "a", "MessageBody": "2"}])
        self.assertError(cm, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct")

    def test_visibility(self):
        url = self.create("vis")
        self.sqs.send_message(QueueUrl=url, MessageBody="v")
        m = self.receive(url, VisibilityTimeout=60)[0]
        self.assertEqual(self.receive(url), [])
        self.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
        again = self.receive(url, AttributeNames=["ApproximateReceiveCount"])
        self.assertEqual(len(again), 1)
        self.assertEqual(again[0]["Attributes"]["ApproximateReceiveCount"], "2")

    def test_delay(self):
        url = self.create("delay")
        self.sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=60)
        attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])["Attributes"]
        self.assertEqual(attrs["ApproximateNumberOfMessagesDelayed"], "1")
        self.assertEqual(self.receive(url), [])

    def test_fifo_order_and_dedup(self):
        url = self.create("order", fifo=True)
        ids = [self.sqs.send_message(QueueUrl=url, MessageBody=f"m{i}", MessageGroupId="g", MessageDeduplicationId=f"d{i}")["MessageId"] for i in range(3)]
        dup = self.sqs.send_message(QueueUrl=url, MessageBody="m0 again", MessageGroupId="g", MessageDeduplicationId="d0")
        self.assertEqual(dup["MessageId"], ids[0])
        msgs = self.receive_all(url, 3, AttributeNames=["All"])
        self.assertEqual([m["Body"] for m in msgs], ["m0", "m1", "m2"])
        self.assertEqual(msgs[0]["Attributes"]["MessageGroupId"], "g")
        self.assertEqual(msgs[0]["Attributes"]["MessageDeduplicationId"], "d0")

    def test_fifo_content_based_dedup(self):
        url = self.create("cbd", fifo=True, attrs={"ContentBasedDeduplication": "true"})
        first = self.sqs.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
        second = self.sqs.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
        self.assertEqual(first["MessageId"], second["MessageId"])
        self.assertEqual(len(self.receive(url)), 1)

    def test_redrive_to_dead_letter_queue(self):
        dlq = self.create("rdlq")
        src = self.create("rsrc", attrs={"RedrivePolicy": json.dumps({"deadLetterTargetArn": self.arn(dlq), "maxReceiveCount": 1})})
        sent = self.sqs.send_message(QueueUrl=src, MessageBody="poison")
        m = self.receive(src)[0]
        self.sqs.change_message_visibility(QueueUrl=src, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
        # The receive that finds it received maxReceiveCount times moves it.
        self.assertEqual(self.receive(src), [])
        moved = self.receive_all(dlq, 1, AttributeNames=["All"])
        self.assertEqual([x["MessageId"] for x in moved], [sent["MessageId"]])
        self.assertEqual(moved[0]["Attributes"]["DeadLetterQueueSourceArn"], self.arn(src))

    def test_message_move_task(self):
        dlq = self.create("mdlq")
        src = self.create("msrc", attrs={"RedrivePolicy": json.dumps({"deadLetterTargetArn": self.arn(dlq), "maxReceiveCount": 1})})
        self.sqs.send_message(QueueUrl=src, MessageBody="back")
        m = self.receive(src)[0]
        self.sqs.change_message_visibility(QueueUrl=src, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
        self.assertEqual(self.receive(src), [])
        task = self.sqs.start_message_move_task(SourceArn=self.arn(dlq))
        self.assertTrue(task["TaskHandle"])
        back = self.receive_all(src, 1)
        self.assertEqual([x["Body"] for x in back], ["back"])
        tasks = self.sqs.list_message_move_tasks(SourceArn=self.arn(dlq), MaxResults=10)["Results"]
        self.assertEqual(len(tasks), 1)
        self.assertEqual(tasks[0]["SourceArn"], self.arn(dlq))
        self.assertIn(tasks[0]["Status"], ("RUNNING", "COMPLETED"))


if __name__ == "__main__":
    unittest.main()
