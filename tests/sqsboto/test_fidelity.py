"""The rows of issue 32 (SQS fidelity), one test per row and behaviour, in both protocols.

Every row is fixed, so none carries a mark; a row test written before its fix would carry
@pending(row) (sqsboto.py): an expected failure until the fix lands, when an unexpected
success fails the run and the mark has to go.
"""
import json
import re
import unittest
import uuid

from sqsboto import PROTOCOL, SQSTest, sha256hex, unique

MIB = 1 << 20


class BareQueueName(SQSTest):
    def test_bare_name_is_a_queue_url(self):
        name = unique("bare")
        self.sqs.create_queue(QueueName=name)
        self.sqs.send_message(QueueUrl=name, MessageBody="by name")
        msgs = self.receive(name)
        self.assertEqual([m["Body"] for m in msgs], ["by name"])
        self.sqs.get_queue_attributes(QueueUrl=name, AttributeNames=["All"])


class EmptyListParameters(SQSTest):
    """botocore sends an empty list as AttributeName= on the query protocol (JSON: [])."""

    def test_receive_with_empty_attribute_names(self):
        url = self.create("emptyattrs")
        self.sqs.send_message(QueueUrl=url, MessageBody="x")
        msgs = self.receive(url, AttributeNames=[], MessageAttributeNames=[])
        self.assertEqual([m["Body"] for m in msgs], ["x"])

    def test_get_queue_attributes_with_no_names(self):
        url = self.create("emptyget")
        out = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[])
        self.assertNotIn("Attributes", out)

    def test_untag_with_no_keys(self):
        # An empty TagKeys is an empty list (docs/sqs.md): nothing is removed, and never the
        # decoder's complaint about a string where a list was due.
        url = self.create("emptyuntag")
        self.sqs.tag_queue(QueueUrl=url, Tags={"team": "a"})
        self.sqs.untag_queue(QueueUrl=url, TagKeys=[])
        self.assertEqual(self.sqs.list_queue_tags(QueueUrl=url).get("Tags"), {"team": "a"})

    def test_empty_send_batch(self):
        url = self.create("emptybatch")
        with self.raises() as cm:
            self.sqs.send_message_batch(QueueUrl=url, Entries=[])
        self.assertError(cm, "AWS.SimpleQueueService.EmptyBatchRequest",
                         message="There should be at least one SendMessageBatchRequestEntry in the request.")

    def test_empty_delete_batch(self):
        url = self.create("emptydel")
        with self.raises() as cm:
            self.sqs.delete_message_batch(QueueUrl=url, Entries=[])
        self.assertError(cm, "AWS.SimpleQueueService.EmptyBatchRequest",
                         message="There should be at least one DeleteMessageBatchRequestEntry in the request.")


    def test_empty_change_visibility_batch(self):
        url = self.create("emptyvis")
        with self.raises() as cm:
            self.sqs.change_message_visibility_batch(QueueUrl=url, Entries=[])
        self.assertError(cm, "AWS.SimpleQueueService.EmptyBatchRequest",
                         message="There should be at least one ChangeMessageVisibilityBatchRequestEntry in the request.")


class MessageAttributeWildcards(SQSTest):
    def send_three(self):
        url = self.create("wild")
        attrs = {n: {"DataType": "String", "StringValue": n} for n in ("Custom.x", "Custom1", "Other")}
        self.sqs.send_message(QueueUrl=url, MessageBody="w", MessageAttributes=attrs)
        return url

    def test_prefix_wildcard(self):
        url = self.send_three()
        m = self.receive(url, MessageAttributeNames=["Custom.*"])[0]
        self.assertEqual(sorted(m.get("MessageAttributes", {})), ["Custom.x", "Custom1"])

    def test_star_is_every_attribute(self):
        url = self.send_three()
        m = self.receive(url, MessageAttributeNames=["*"])[0]
        self.assertEqual(sorted(m.get("MessageAttributes", {})), ["Custom.x", "Custom1", "Other"])

    def test_all_and_dot_star(self):
        url = self.send_three()
        m = self.receive(url, MessageAttributeNames=["All"], VisibilityTimeout=0)[0]
        self.assertEqual(sorted(m["MessageAttributes"]), ["Custom.x", "Custom1", "Other"])
        m = self.receive(url, MessageAttributeNames=[".*"])[0]
        self.assertEqual(sorted(m["MessageAttributes"]), ["Custom.x", "Custom1", "Other"])


class FifoBatchWithoutGroup(SQSTest):
    def test_whole_batch_fails(self):
        url = self.create("nogroup", fifo=True, attrs={"ContentBasedDeduplication": "true"})
        with self.raises() as cm:
            self.sqs.send_message_batch(QueueUrl=url, Entries=[
                {"Id": "ok", "MessageBody": "a", "MessageGroupId": "g"},
                {"Id": "bad", "MessageBody": "b"},
            ])
        self.assertError(cm, "InvalidParameterValue", message="The request must contain the parameter MessageGroupId.")
        self.assertEqual(self.receive(url), [], "a refused batch sent some of its messages")


    def test_whole_batch_fails_without_dedup_id(self):
        url = self.create("nodedup", fifo=True)
        with self.raises() as cm:
            self.sqs.send_message_batch(QueueUrl=url, Entries=[
                {"Id": "ok", "MessageBody": "a", "MessageGroupId": "g", "MessageDeduplicationId": "a"},
                {"Id": "bad", "MessageBody": "b", "MessageGroupId": "g"},
            ])
        self.assertError(cm, "InvalidParameterValue", message=re.compile(
            r"^The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"))
        self.assertEqual(self.receive(url), [], "a refused batch sent some of its messages")


class FifoSequenceNumber(SQSTest):
    def test_send_message_answers_sequence_number(self):
        url = self.create("seq", fifo=True)
        a = self.sqs.send_message(QueueUrl=url, MessageBody="a", MessageGroupId="g", MessageDeduplicationId="a")
        b = self.sqs.send_message(QueueUrl=url, MessageBody="b", MessageGroupId="g", MessageDeduplicationId="b")
        self.assertRegex(a.get("SequenceNumber", ""), r"^\d+$")
        self.assertLess(int(a["SequenceNumber"]), int(b["SequenceNumber"]))
        got = self.receive(url, AttributeNames=["SequenceNumber"])[0]
        self.assertEqual(got["Attributes"]["SequenceNumber"], a["SequenceNumber"])

    def test_send_message_batch_answers_sequence_numbers(self):
        url = self.create("seqb", fifo=True)
        out = self.sqs.send_message_batch(QueueUrl=url, Entries=[
            {"Id": f"e{i}", "MessageBody": str(i), "MessageGroupId": "g", "MessageDeduplicationId": str(i)} for i in range(2)])
        for s in out["Successful"]:
            self.assertRegex(s.get("SequenceNumber", ""), r"^\d+$")


class UUIDQueueNames(SQSTest):
    def test_uuid_named_queue(self):
        name = str(uuid.uuid4())
        url = self.sqs.create_queue(QueueName=name)["QueueUrl"]
        self.assertEqual(self.sqs.get_queue_url(QueueName=name)["QueueUrl"], url)
        self.sqs.send_message(QueueUrl=url, MessageBody="u")
        self.assertEqual([m["Body"] for m in self.receive(url)], ["u"])

    def test_uuid_named_fifo_queue(self):
        # Not UUID-shaped as a whole (the .fifo suffix), so served before the row's fix too.
        name = str(uuid.uuid4()).upper() + ".fifo"
        url = self.sqs.create_queue(QueueName=name, Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
        self.sqs.send_message(QueueUrl=url, MessageBody="u", MessageGroupId="g")
        self.assertEqual([m["Body"] for m in self.receive(url)], ["u"])


class Permissions(SQSTest):
    def policy(self, url):
        attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        return json.loads(attrs["Policy"]) if "Policy" in attrs else None

    def test_add_and_remove_permission(self):
        url = self.create("perm")
        self.sqs.add_permission(QueueUrl=url, Label="one", AWSAccountIds=["111111111111"], Actions=["SendMessage"])
        self.sqs.add_permission(QueueUrl=url, Label="two", AWSAccountIds=["111111111111", "222222222222"],
                                Actions=["ReceiveMessage", "DeleteMessage"])
        doc = self.policy(url)
        arn = self.arn(url)
        self.assertEqual(doc["Version"], "2012-10-17")
        self.assertEqual(doc["Id"], arn + "/SQSDefaultPolicy")
        self.assertEqual(doc["Statement"], [
            {"Sid": "one", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111111111111:root"},
             "Action": "SQS:SendMessage", "Resource": arn},
            {"Sid": "two", "Effect": "Allow",
             "Principal": {"AWS": ["arn:aws:iam::111111111111:root", "arn:aws:iam::222222222222:root"]},
             "Action": ["SQS:ReceiveMessage", "SQS:DeleteMessage"], "Resource": arn},
        ])
        self.sqs.remove_permission(QueueUrl=url, Label="one")
        self.assertEqual([s["Sid"] for s in self.policy(url)["Statement"]], ["two"])
        self.sqs.remove_permission(QueueUrl=url, Label="two")
        self.assertIsNone(self.policy(url))

    def test_add_permission_refusals(self):
        url = self.create("permerr")
        self.sqs.add_permission(QueueUrl=url, Label="dup", AWSAccountIds=["111111111111"], Actions=["*"])
        cases = [
            (dict(Label="dup", AWSAccountIds=["1"], Actions=["SendMessage"]), "InvalidParameterValue", 400,
             "Value dup for parameter Label is invalid. Reason: Already exists."),
            (dict(Label="x", AWSAccountIds=["1"], Actions=["RemovePermission"]), "InvalidParameterValue", 400,
             "Value SQS:RemovePermission for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action."),
            (dict(Label="x", AWSAccountIds=["1"], Actions=[]), "MissingParameter", 400,
             "The request must contain the parameter Actions."),
            (dict(Label="x", AWSAccountIds=[], Actions=["SendMessage"]), "InvalidParameterValue", 400,
             "Value [] for parameter PrincipalId is invalid. Reason: Unable to verify."),
            (dict(Label="x", AWSAccountIds=["1"], Actions=["ChangeMessageVisibility", "DeleteMessage", "GetQueueAttributes",
                                                           "GetQueueUrl", "ListDeadLetterSourceQueues", "PurgeQueue",
                                                           "ReceiveMessage", "SendMessage"]),
             "OverLimit", 403, "8 Actions were found, maximum allowed is 7."),
        ]
        for kw, code, status, message in cases:
            with self.subTest(**{k: str(v) for k, v in kw.items()}):
                with self.raises() as cm:
                    self.sqs.add_permission(QueueUrl=url, **kw)
                self.assertError(cm, code, status, message)
        self.assertEqual([s["Sid"] for s in self.policy(url)["Statement"]], ["dup"])

    def test_remove_unknown_label(self):
        url = self.create("permnone")
        with self.raises() as cm:
            self.sqs.remove_permission(QueueUrl=url, Label="nope")
        self.assertError(cm, "InvalidParameterValue",
                         message="Value nope for parameter Label is invalid. Reason: can't find label on existing policy.")

    def test_policy_set_to_empty_is_removed(self):
        url = self.create("policy")
        doc = {"Version": "2012-10-17", "Statement": [{"Sid": "s", "Effect": "Allow", "Principal": "*",
                                                        "Action": "sqs:SendMessage", "Resource": self.arn(url)}]}
        self.sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(doc)})
        self.assertEqual(self.policy(url), doc)
        self.sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": ""})
        self.assertIsNone(self.policy(url))
        self.assertNotIn("Attributes", self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"]))


class DedupIdEqualToContentHash(SQSTest):
    def test_explicit_id_equal_to_content_hash_is_the_same_id(self):
        url = self.create("hash", fifo=True, attrs={"ContentBasedDeduplication": "true"})
        first = self.sqs.send_message(QueueUrl=url, MessageBody="body", MessageGroupId="g")
        again = self.sqs.send_message(QueueUrl=url, MessageBody="other", MessageGroupId="g",
                                      MessageDeduplicationId=sha256hex("body"))
        self.assertEqual(again["MessageId"], first["MessageId"])
        msgs = self.receive(url, AttributeNames=["MessageDeduplicationId"])
        self.assertEqual([m["Body"] for m in msgs], ["body"])
        self.assertEqual(msgs[0]["Attributes"]["MessageDeduplicationId"], sha256hex("body"))


class MessageSize(SQSTest):
    def test_one_mib_message(self):
        url = self.create("big", attrs={"MaximumMessageSize": str(MIB)})
        attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["MaximumMessageSize"])["Attributes"]
        self.assertEqual(attrs["MaximumMessageSize"], str(MIB))
        body = "x" * MIB
        self.sqs.send_message(QueueUrl=url, MessageBody=body)
        got = self.receive(url)
        self.assertEqual(len(got), 1)
        self.assertEqual(got[0]["Body"], body)

    def test_over_the_queue_limit_is_refused(self):
        url = self.create("small", attrs={"MaximumMessageSize": "1024"})
        with self.raises() as cm:
            self.sqs.send_message(QueueUrl=url, MessageBody="x" * 1025)
        self.assertError(cm, "InvalidParameterValue")


class ErrorTexts(SQSTest):
    NO_QUEUE = {"json": "The specified queue does not exist.",
                "query": "The specified queue does not exist for this wsdl version."}

    def test_non_existent_queue(self):
        with self.raises() as cm:
            self.sqs.get_queue_url(QueueName=unique("missing"))
        self.assertError(cm, "AWS.SimpleQueueService.NonExistentQueue", message=self.NO_QUEUE[PROTOCOL])

    def test_fifo_message_delay(self):
        url = self.create("fifodelay", fifo=True, attrs={"ContentBasedDeduplication": "true"})
        with self.raises() as cm:
            self.sqs.send_message(QueueUrl=url, MessageBody="d", MessageGroupId="g", DelaySeconds=5)
        self.assertError(cm, "InvalidParameterValue", message=re.compile(
            r"^Value 5 for parameter DelaySeconds is invalid\. Reason: "))

    def test_delay_out_of_range(self):
        url = self.create("bigdelay")
        with self.raises() as cm:
            self.sqs.send_message(QueueUrl=url, MessageBody="d", DelaySeconds=901)
        self.assertError(cm, "InvalidParameterValue", message=re.compile(
            r"^Value 901 for parameter DelaySeconds is invalid\. Reason: "))


class OlderReceiptHandles(SQSTest):
    def test_change_visibility_with_an_earlier_handle(self):
        url = self.create("older")
        self.sqs.send_message(QueueUrl=url, MessageBody="h")
        first = self.receive(url, VisibilityTimeout=0)[0]
        second = self.receive(url, VisibilityTimeout=60)[0]
        self.assertNotEqual(first["ReceiptHandle"], second["ReceiptHandle"])
        # SQS answers success; what it then does to the current delivery is not asserted.
        self.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)

    def test_delete_with_an_earlier_handle_succeeds(self):
        url = self.create("olderdel")
        self.sqs.send_message(QueueUrl=url, MessageBody="h")
        first = self.receive(url, VisibilityTimeout=0)[0]
        self.receive(url, VisibilityTimeout=60)
        self.sqs.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])


if __name__ == "__main__":
    unittest.main()
