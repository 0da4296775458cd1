"""Every topic and source route of the client against a real ``queues serve``, and the
fan-out's copies arriving in the bound queues."""

from __future__ import annotations

import time
import unittest

from queues import Client, PublishMessage, QueuesError

from . import server
from .server import unique


class TopicsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = server.get()
        op = cls.srv.operator_client()
        p = op.create_project(unique("topics"))
        cls.c = cls.srv.client(op.create_token(p.id, "all", ["*"]).token)

    def raises(self, code: str, status: int, fn: object, *args: object, **kw: object) -> QueuesError:
        with self.assertRaises(QueuesError) as cm:
            fn(*args, **kw)  # type: ignore[operator]
        self.assertEqual((cm.exception.code, cm.exception.status), (code, status), str(cm.exception))
        return cm.exception

    def copies(self, queue: str, n: int) -> list[str]:
        """Receives (and acknowledges) queue's messages until n arrived; each receive
        long-polls for the fan-out's copies, so this waits for an event, not a time."""
        c: Client = self.c
        bodies: list[str] = []
        deadline = time.monotonic() + 60
        while len(bodies) < n and time.monotonic() < deadline:
            for m in c.receive(queue, max_messages=10, wait_seconds=2):
                bodies.append(m.body)
                c.ack(m.receipt_handle)
        return sorted(bodies)

    def test_topics_bindings_publish_log_state(self) -> None:
        c: Client = self.c
        name = unique("prices")
        t = c.create_topic(name, retention_seconds=3600)
        self.assertTrue(t.slug.startswith("top_"))
        self.assertEqual((t.type, t.last_sequence, t.first_sequence), ("standard", 0, 1))
        self.assertEqual(self.raises("topic_exists", 409, c.create_topic, name).field, "name")
        self.assertEqual([x.id for x in c.list_topics(prefix=name).items], [t.id])
        self.assertEqual([x.name for x in c.all_topics(prefix=name)], [name])
        self.assertEqual(c.get_topic(t.slug).id, t.id)
        self.assertEqual(c.update_topic(name, retention_seconds=7200).retention_seconds, 7200)

        eu, every = unique("eu"), unique("every")
        c.create_queue(eu)
        c.create_queue(every)
        b = c.bind(eu, name, filter={"region": "eu"})
        self.assertTrue(b.slug.startswith("qbd_"))
        self.assertEqual((b.from_, b.start_sequence, b.filter), ("now", 1, {"attributes": {"region": ["eu"]}}))
        c.bind(every, name, from_="earliest")
        self.raises("binding_exists", 409, c.bind, eu, name)
        self.assertEqual([x.id for x in c.list_sources(eu)], [b.id])
        self.assertEqual(len(c.topic_bindings(name)), 2)
        self.assertEqual(c.get_source(eu, b.slug).id, b.id)

        r = c.publish_batch(name, [PublishMessage("eu-1", {"region": "eu"}), PublishMessage("bad", group_id="g"),
                                   PublishMessage('{"bid":1}', {"region": "us"}, key="AAPL")])
        self.assertEqual([m.sequence for m in r.messages], [1, 2])
        self.assertEqual(r.failed[0].error.field, "messages[1].groupId")
        self.assertEqual(c.publish(name, None, key="GONE").sequence, 3)
        self.assertEqual(self.copies(eu, 1), ["eu-1"])
        # The null-body publish that deleted GONE's state is copied too ("published as such").
        self.assertEqual(self.copies(every, 3), sorted(["", "eu-1", '{"bid":1}']))

        page = c.read_log(name, from_=1, limit=2)
        self.assertEqual(([e.sequence for e in page.items], page.items[0].message_id), ([1, 2], r.messages[0].message_id))
        entries = list(c.log_entries(name))
        self.assertEqual([(e.sequence, e.deleted, e.body) for e in entries][2], (3, True, None))
        self.assertEqual([e.sequence for e in c.read_log(name, filter={"region": "us"}).items], [2])
        self.assertEqual(c.get_state(name, "AAPL").body, '{"bid":1}')
        self.raises("not_found", 404, c.get_state, name, "GONE")
        self.assertEqual([s.key for s in c.list_state(name).items], ["AAPL"])
        self.assertEqual([s.key for s in c.all_state(name)], ["AAPL"])

        self.assertIsNone(c.update_source_filter(eu, b.id, None).filter)
        c.unbind(eu, b.slug)
        self.assertEqual(c.list_sources(eu), [])
        c.delete_topic(name)
        self.raises("not_found", 404, c.get_topic, name)


if __name__ == "__main__":
    unittest.main()
