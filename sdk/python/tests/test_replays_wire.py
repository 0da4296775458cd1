"""The replay calls against the scripted stand-in server of test_topics_wire: the request
each call sends and that it reads the documented answers (docs/topics.md "Replay")."""

from __future__ import annotations

import unittest

from queues import QueuesError, Replay, ReplayOf
from queues.models import Message

from . import test_topics_wire as wire

REPLAY = {"id": "r1", "topicId": "t1", "topic": "prices", "queueId": "q1", "queue": "rebuild", "from": 3, "to": 9,
          "filter": {"attributes": {"region": ["eu"]}}, "status": "running", "moved": 0, "toMove": 4, "failed": 0,
          "maxMessagesPerSecond": 50, "dryRun": False, "startedAt": "2026-12-04T10:00:00Z", "finishedAt": None}


class ReplaysWireTest(wire.TopicsWireTest):
    def test_replays(self) -> None:
        done = {**REPLAY, "status": "completed", "moved": 4, "finishedAt": "2026-12-04T10:00:01Z"}
        c = self.serve([
            ("POST /v1/topics/prices/replays", {"queue": "rebuild", "from": "3", "to": "2026-12-04T11:00:00Z",
                                                "filter": {"attributes": {"region": "eu"}}, "maxMessagesPerSecond": 50},
             201, REPLAY),
            ("POST /v1/topics/prices/replays", {"queue": "rebuild", "from": "1", "dryRun": True}, 409,
             {"error": {"code": "move_task_running", "message": "busy"}}),
            ("GET /v1/topics/prices/replays?limit=1", None, 200, {"replays": [done], "nextCursor": None}),
            ("GET /v1/topics/prices/replays/r1", None, 200, done),
            ("POST /v1/topics/prices/replays/r1/cancel", None, 200, done),
        ])
        r = c.start_replay("prices", "rebuild", from_=3, to="2026-12-04T11:00:00Z", filter={"region": "eu"},
                           max_messages_per_second=50)
        self.assertIsInstance(r, Replay)
        self.assertEqual((r.from_, r.to, r.status, r.to_move, r.queue), (3, 9, "running", 4, "rebuild"))
        with self.assertRaises(QueuesError) as cm:
            c.start_replay("prices", "rebuild", from_=1, dry_run=True)
        self.assertEqual((cm.exception.code, cm.exception.status), ("move_task_running", 409))
        self.assertEqual(c.list_replays("prices", limit=1).items[0].moved, 4)
        self.assertEqual(c.get_replay("prices", "r1").finished_at, "2026-12-04T10:00:01Z")
        self.assertEqual(c.cancel_replay("prices", "r1").status, "completed")

    def test_replay_of(self) -> None:
        m = Message.from_dict({"messageId": "m", "body": "b", "attributes": {}, "replayOf": {"topic": "t1", "sequence": 7}})
        self.assertEqual(m.replay_of, ReplayOf(topic="t1", sequence=7))
        self.assertIsNone(Message.from_dict({"messageId": "m"}).replay_of)

    # The inherited topic tests run in test_topics_wire.
    test_topics = test_publish = test_bindings = test_log_and_state = None  # type: ignore[assignment]


if __name__ == "__main__":
    unittest.main()
