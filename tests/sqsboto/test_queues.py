"""Queue actions: the ordinary paths, as an SQS user's code takes them."""
import json
import unittest

from sqsboto import PROTOCOL, REGION, SQSTest, new_client, unique


class Protocol(unittest.TestCase):
    def test_client_speaks_the_protocol_wanted(self):
        c = new_client()
        self.assertEqual(c.meta.service_model.protocol, PROTOCOL)
        c.list_queues()
        self.assertEqual(c.wire_check.seen, 1, "the wire check saw no request")


class Queues(SQSTest):
    def test_create_get_url_and_attributes(self):
        name = unique("attrs")
        url = self.sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "45", "DelaySeconds": "2"})["QueueUrl"]
        self.assertTrue(url.endswith("/" + name), url)
        self.assertEqual(self.sqs.get_queue_url(QueueName=name)["QueueUrl"], url)
        # The same name and attributes: the same queue.
        self.assertEqual(self.sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "45"})["QueueUrl"], url)
        attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        self.assertEqual(attrs["VisibilityTimeout"], "45")
        self.assertEqual(attrs["DelaySeconds"], "2")
        self.assertEqual(attrs["ApproximateNumberOfMessages"], "0")
        self.assertRegex(attrs["QueueArn"], r"^arn:aws:sqs:%s:[^:]+:%s$" % (REGION, name))
        self.assertNotIn("Policy", attrs)
        self.sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "60", "MessageRetentionPeriod": "3600"})
        got = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout", "MessageRetentionPeriod"])["Attributes"]
        self.assertEqual(got, {"VisibilityTimeout": "60", "MessageRetentionPeriod": "3600"})

    def test_create_with_other_attributes_is_refused(self):
        name = unique("exists")
        self.sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "45"})
        with self.raises() as cm:
            self.sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "46"})
        self.assertError(cm, "QueueAlreadyExists")

    def test_fifo_queue_attributes(self):
        url = self.create("fifo", fifo=True, attrs={"ContentBasedDeduplication": "true"})
        attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        self.assertEqual(attrs["FifoQueue"], "true")
        self.assertEqual(attrs["ContentBasedDeduplication"], "true")

    def test_unknown_attribute_is_refused(self):
        url = self.create("unknown")
        with self.raises() as cm:
            self.sqs.set_queue_attributes(QueueUrl=url, Attributes={"NoSuchAttribute": "1"})
        self.assertError(cm, "InvalidAttributeName")

    def test_tags(self):
        url = self.create("tags", tags={"team": "shop"})
        self.sqs.tag_queue(QueueUrl=url, Tags={"env": "test", "team": "ops"})
        self.assertEqual(self.sqs.list_queue_tags(QueueUrl=url)["Tags"], {"env": "test", "team": "ops"})
        self.sqs.untag_queue(QueueUrl=url, TagKeys=["env", "absent"])
        self.assertEqual(self.sqs.list_queue_tags(QueueUrl=url)["Tags"], {"team": "ops"})

    def test_list_queues_with_prefix_and_pages(self):
        prefix = unique("lst")
        urls = sorted(self.sqs.create_queue(QueueName=f"{prefix}-{i}")["QueueUrl"] for i in range(3))
        self.assertEqual(sorted(self.sqs.list_queues(QueueNamePrefix=prefix)["QueueUrls"]), urls)
        first = self.sqs.list_queues(QueueNamePrefix=prefix, MaxResults=2)
        self.assertEqual(len(first["QueueUrls"]), 2)
        second = self.sqs.list_queues(QueueNamePrefix=prefix, MaxResults=2, NextToken=first["NextToken"])
        self.assertEqual(sorted(first["QueueUrls"] + second["QueueUrls"]), urls)
        self.assertNotIn("NextToken", second)
        self.assertNotIn("QueueUrls", self.sqs.list_queues(QueueNamePrefix=unique("none")))

    def test_purge(self):
        url = self.create("purge")
        self.sqs.send_message(QueueUrl=url, MessageBody="a")
        self.sqs.purge_queue(QueueUrl=url)
        self.assertEqual(self.receive(url), [])
        with self.raises() as cm:
            self.sqs.purge_queue(QueueUrl=url)
        self.assertError(cm, "AWS.SimpleQueueService.PurgeQueueInProgress", 403)

    def test_delete_queue(self):
        name = unique("gone")
        url = self.sqs.create_queue(QueueName=name)["QueueUrl"]
        self.sqs.delete_queue(QueueUrl=url)
        with self.raises() as cm:
            self.sqs.get_queue_url(QueueName=name)
        self.assertError(cm, "AWS.SimpleQueueService.NonExistentQueue")

    def test_dead_letter_source_queues(self):
        dlq = self.create("dlq")
        src = self.create("src", attrs={"RedrivePolicy": json.dumps({"deadLetterTargetArn": self.arn(dlq), "maxReceiveCount": 2})})
        self.assertEqual(self.sqs.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"], [src])
        policy = json.loads(self.sqs.get_queue_attributes(QueueUrl=src, AttributeNames=["RedrivePolicy"])["Attributes"]["RedrivePolicy"])
        self.assertEqual(policy, {"deadLetterTargetArn": self.arn(dlq), "maxReceiveCount": 2})
        self.sqs.set_queue_attributes(QueueUrl=src, Attributes={"RedrivePolicy": ""})
        self.assertNotIn("Attributes", self.sqs.get_queue_attributes(QueueUrl=src, AttributeNames=["RedrivePolicy"]))


if __name__ == "__main__":
    unittest.main()
