"""What every module of the suite shares: the client, the protocol check, the pending marks.

The suite runs against one Queues service and one project, named by the environment (tests/sqs
TestBoto3Suite sets it, once per backend and protocol):

    QUEUES_SQSBOTO_URL       the service's base URL (the SQS door answers on it)
    QUEUES_SQSBOTO_KEY       the project token's SQS access key id (its tok_ slug)
    QUEUES_SQSBOTO_SECRET    its sqsSecretAccessKey
    QUEUES_SQSBOTO_PROTOCOL  json or query: the protocol the client must speak
    AWS_DATA_PATH            models/json or models/query of this folder, so that botocore loads
                             the SQS model of that protocol whatever its own version ships
"""
import hashlib
import os
import re
import unittest
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

URL = os.environ.get("QUEUES_SQSBOTO_URL", "")
KEY = os.environ.get("QUEUES_SQSBOTO_KEY", "")
SECRET = os.environ.get("QUEUES_SQSBOTO_SECRET", "")
PROTOCOL = os.environ.get("QUEUES_SQSBOTO_PROTOCOL", "")
# The backend's name (stack or serve), for a row fixed on one backend and not yet the other.
BACKEND = os.environ.get("QUEUES_SQSBOTO_BACKEND", "")
# QUEUES_SQSBOTO_NO_PENDING=1 runs the pending tests as ordinary ones (to see why they fail, or
# that they pass once their branch is merged).
NO_PENDING = os.environ.get("QUEUES_SQSBOTO_NO_PENDING", "") != ""
REGION = "eu-west-3"

# Error codes are the query protocol's on both protocols: on JSON 1.0 botocore (1.29 as much as
# later releases) takes the code from the x-amzn-query-error header SQS sends.


def pending(row, protocols=("json", "query"), backends=("stack", "serve")):
    """Marks a test of an issue-32 row that another branch fixes: an expected failure on the
    protocols and backends named, until that branch is merged and the mark removed. An
    unexpected success fails the run, so a mark cannot outlive its fix unnoticed."""

    def mark(f):
        if PROTOCOL in protocols and BACKEND in backends and not NO_PENDING:
            f = unittest.expectedFailure(f)
        f.pending_row = row
        return f

    return mark


class WireCheck:
    """A botocore before-send hook: every request must be of the protocol wanted (JSON 1.0:
    Content-Type application/x-amz-json-1.0 and X-Amz-Target AmazonSQS.<action>; query: a
    form with Action= and no X-Amz-Target). A request of the other protocol raises, so the
    call fails."""

    def __init__(self):
        self.seen = 0

    def __call__(self, request, **kwargs):
        headers = {k.lower(): (v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()}
        ctype, target = headers.get("content-type", ""), headers.get("x-amz-target", "")
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode()
        if PROTOCOL == "json":
            ok = ctype.startswith("application/x-amz-json-1.0") and target.startswith("AmazonSQS.")
        else:
            ok = ctype.startswith("application/x-www-form-urlencoded") and not target and b"Action=" in body
        if not ok:
            raise AssertionError(f"wrong protocol on the wire (want {PROTOCOL}): Content-Type {ctype!r}, X-Amz-Target {target!r}")
        self.seen += 1
        return None


def new_client():
    """An SQS client on the service, with the wire check registered."""
    if PROTOCOL not in ("json", "query") or not URL:
        raise unittest.SkipTest("QUEUES_SQSBOTO_URL and QUEUES_SQSBOTO_PROTOCOL (json|query) are not set")
    c = boto3.session.Session().client(
        "sqs",
        endpoint_url=URL,
        region_name=REGION,
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
        config=Config(retries={"max_attempts": 1}, read_timeout=30),
    )
    check = WireCheck()
    c.meta.events.register("before-send.sqs", check)
    c.wire_check = check
    return c


def unique(stem):
    """A queue name no other test uses."""
    return f"{stem}-{uuid.uuid4().hex[:10]}"


def sha256hex(s):
    return hashlib.sha256(s.encode()).hexdigest()


class SQSTest(unittest.TestCase):
    """A test case with a client and helpers."""

    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.sqs = new_client()

    def create(self, stem, fifo=False, attrs=None, **kw):
        name = unique(stem) + (".fifo" if fifo else "")
        attrs = dict(attrs or {})
        if fifo:
            attrs["FifoQueue"] = "true"
        return self.sqs.create_queue(QueueName=name, Attributes=attrs, **kw)["QueueUrl"]

    def arn(self, url):
        return self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    def receive(self, url, n=10, wait=0, **kw):
        return self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=n, WaitTimeSeconds=wait, **kw).get("Messages", [])

    def receive_all(self, url, want, **kw):
        """Receives until want messages came (each receive long-polls up to 2 s; at most 10)."""
        got = []
        for _ in range(10):
            if len(got) >= want:
                break
            got += self.receive(url, wait=2, **kw)
        return got

    def assertError(self, cm, code, status=400, message=None):
        """cm is an assertRaises(ClientError) context; code is the query protocol's; message is
        AWS's text, or a pattern for it."""
        err = cm.exception.response["Error"]
        self.assertEqual(err.get("Code"), code, err)
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], status, err)
        if message is not None:
            if isinstance(message, re.Pattern):
                self.assertRegex(err.get("Message", ""), message)
            else:
                self.assertEqual(err.get("Message"), message)

    def raises(self):
        return self.assertRaises(ClientError)
