package rediskeys

import "github.com/queueshq/queues/pkg/ids"

// Topics (docs/topics.md; pkg/engine/redisengine topics.go). Every key of one topic shares the hash
// tag {tp:<topic id>}, so on Redis Cluster a topic is one slot and a publish is one script
// (all or nothing). The tag is "tp:", not the "t:" of the project keys below: a topic's byte
// hash would otherwise be spelled exactly as a project's ({t:<id>}:b), and an operator could
// not tell them apart. A topic's slot is never a queue's: the fan-out copies between them in
// two steps (engine.Topics: Copy, then AdvanceBindings).
//
//	{tp:<id>}:log       STREAM the log: entry id "<sequence>-0", fields e (the entry:
//	                          redisengine topicenc.go), s (its stored bytes) and t (published
//	                          at, ms; never lower than the entry before: topic_publish.lua); read
//	                          by XRANGE, trimmed from the head in bounded steps (topic_trim.lua)
//	{tp:<id>}:n         STRING the last sequence assigned (0 or absent before the first publish)
//	{tp:<id>}:d:<dedup> STRING fifo publish dedup marker: "<sequence>|<at ms>|" + message id
//	                          (16 raw bytes); PX = the dedup window + a minute (the window is
//	                          checked against the engine clock); the dedup id follows the tag
//	{tp:<id>}:st        HASH  keyed state: key -> "<sequence>|<published at ms>|<bytes>|" + the
//	                          state (body and attributes, topicenc.go); the sequence is the
//	                          version a patch publish expects (read, merge, write if unchanged)
//	{tp:<id>}:sk        ZSET  the keys of st, all scores 0 (key order for StatePage)
//	{tp:<id>}:bd        HASH  binding id -> "<sequence>|<copied>|<failed>|<last error at ms>|
//	                          <queue id>|<len(filter)>:" + filter + last error
//	{tp:<id>}:lease     STRING fan-out lease: "<until ms>|<owner>" (engine clock; PX as a
//	                          backstop)
//	{tp:<id>}:w         STRING written before WAIT when publishes wait for replicas (as a
//	                          partition's w; expires after a minute)
//	{tp:<id>}:b         HASH  stored bytes of the log and the state, fields as a queue
//	                          partition's b (n, v, pj; o unused), folded into the project's
//	                          {t:<project>}:b the same way (field: this key's name)
//
// and, per queue, beside the queue's partition 0 (the partition a standard queue's copies go
// to, so the mark and the copies are written by one script):
//
//	{q:<id>:0}:tc       HASH  binding id -> the highest sequence copied into the queue (the
//	                          binding's high-water mark; copy.lua)
//
// and one for the whole deployment:
//
//	{active}:topics     ZSET  topics that may have entries not yet fanned out or trimmed ->
//	                          when a publish last named them (ms, engine clock)
//	{active}:twake      ZSET  idle topics -> when their oldest entry passes the retention
//	                          (ms, engine clock; IdleTopic's wakeAt): listed once it is due

// TopicTag is the hash tag of a topic's keys.
func TopicTag(t ids.ID) string { return "{tp:" + t.String() + "}" }

// TopicLog is a topic's log stream.
func TopicLog(t ids.ID) string { return TopicTag(t) + ":log" }

// TopicSeq is a topic's last sequence.
func TopicSeq(t ids.ID) string { return TopicTag(t) + ":n" }

// TopicDedup is a fifo topic's publish dedup marker of one dedup id.
func TopicDedup(t ids.ID, dedup string) string { return TopicTag(t) + ":d:" + dedup }

// TopicState is a topic's keyed state.
func TopicState(t ids.ID) string { return TopicTag(t) + ":st" }

// TopicStateKeys is the key-ordered set of a topic's state keys.
func TopicStateKeys(t ids.ID) string { return TopicTag(t) + ":sk" }

// TopicBindings is a topic's bindings hash.
func TopicBindings(t ids.ID) string { return TopicTag(t) + ":bd" }

// TopicLease is a topic's fan-out lease.
func TopicLease(t ids.ID) string { return TopicTag(t) + ":lease" }

// TopicBytes is a topic's stored-bytes hash.
func TopicBytes(t ids.ID) string { return TopicTag(t) + ":b" }

// TopicWait is the key a publish writes before WAIT (redisengine replicas.go).
func TopicWait(t ids.ID) string { return TopicTag(t) + ":w" }

// TopicCopied is queue q's hash of binding high-water marks (in partition 0's slot).
func TopicCopied(q ids.ID) string { return PartitionOf(q, 0).Tag + ":tc" }

// ActiveTopics is the set of topics with fan-out or trim work.
const ActiveTopics = "{active}:topics"

// TopicWakes holds the wake times of idle topics (in ActiveTopics' slot).
const TopicWakes = "{active}:twake"
