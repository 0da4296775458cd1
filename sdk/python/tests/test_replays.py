"""The replay routes of the client against a real ``queues serve``: a dry run, a replay
followed to its end, its copies carrying ``replay_of``, listing and cancelling."""

from __future__ import annotations

import time
import unittest

from queues import PublishMessage, QueuesError

from . import server
from .server import unique


class ReplaysTest(unittest.TestCase):
    def test_replay(self) -> None:
        srv = server.get()
        op = srv.operator_client()
        p = op.create_project(unique("replays"))
        c = srv.client(op.create_token(p.id, "all", ["*"]).token)
        t = c.create_topic(unique("rt"))
        dst = unique("rq")
        c.create_queue(dst)
        c.publish_batch(t.name, [PublishMessage("one", attributes={"region": "eu"}), PublishMessage("two"),
                                 PublishMessage("three")]).raise_for_failed()
        dry = c.start_replay(t.name, dst, from_=1, dry_run=True, filter={"region": "eu"})
        self.assertEqual((dry.status, dry.to_move, dry.moved), ("completed", 1, 0))
        r = c.start_replay(t.name, dst, from_="1", to=2)
        self.assertEqual((r.from_, r.to), (1, 2))
        deadline = time.monotonic() + 30
        while r.status == "running" and time.monotonic() < deadline:
            time.sleep(0.05)  # the task's progress is only readable by polling
            r = c.get_replay(t.name, r.id)
        self.assertEqual((r.status, r.moved, r.to_move), ("completed", 2, 2))
        self.assertEqual(c.cancel_replay(t.name, r.id).status, "completed")
        self.assertEqual([x.id for x in c.list_replays(t.name, limit=1).items], [r.id])
        got = c.receive(dst, max_messages=10, wait_seconds=1)
        self.assertEqual(sorted(m.replay_of.sequence for m in got), [1, 2])
        self.assertTrue(all(m.replay_of.topic == t.id and "#replayOf" not in m.attributes for m in got))
        with self.assertRaises(QueuesError) as cm:
            c.start_replay(t.name, "nowhere", from_=1)
        self.assertEqual((cm.exception.code, cm.exception.status, cm.exception.field), ("not_found", 404, "queue"))


if __name__ == "__main__":
    unittest.main()
