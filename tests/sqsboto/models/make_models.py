"""Makes the two SQS service models the suite runs on (kept in the repository, see README.md).

    python3 make_models.py QUERY_SOURCE JSON_SOURCE

QUERY_SOURCE is botocore 1.29's sqs/2012-11-05/service-2.json (Debian's python3-botocore: the
query protocol), JSON_SOURCE a newer botocore's (1.43: JSON 1.0 with awsQueryCompatible; .gz
or not). Documentation is dropped (the models are for the wire, not for reading). The query
model gets the three message move task actions, which botocore 1.29 predates, copied from the
JSON model with the query protocol's result wrapper and flattened result list.
"""
import gzip
import json
import os
import sys

DROP = {"documentation", "documentationUrl", "deprecatedMessage"}
MOVE_OPS = ["StartMessageMoveTask", "ListMessageMoveTasks", "CancelMessageMoveTask"]


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k not in DROP}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def shapes_of(model, name, seen):
    """Every shape name reachable from name."""
    if name in seen:
        return
    seen.add(name)
    shape = model["shapes"][name]
    refs = list(shape.get("members", {}).values())
    refs += [shape[k] for k in ("member", "key", "value") if k in shape]
    for ref in refs:
        shapes_of(model, ref["shape"], seen)


def add_move_tasks(query, js):
    for op in MOVE_OPS:
        spec = json.loads(json.dumps(js["operations"][op]))
        spec["output"]["resultWrapper"] = op + "Result"
        query["operations"][op] = spec
        seen = set()
        shapes_of(js, spec["input"]["shape"], seen)
        shapes_of(js, spec["output"]["shape"], seen)
        for err in spec.get("errors", []):
            shapes_of(js, err["shape"], seen)
        for name in seen:
            query["shapes"].setdefault(name, json.loads(json.dumps(js["shapes"][name])))
    results = query["shapes"]["ListMessageMoveTasksResult"]["members"]["Results"]
    results["locationName"] = "ListMessageMoveTasksResultEntry"
    query["shapes"][results["shape"]]["flattened"] = True


def write(model, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(model, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    query, js = strip(load(sys.argv[1])), strip(load(sys.argv[2]))
    assert query["metadata"]["protocol"] == "query", "the first model must be the query one"
    assert js["metadata"]["protocol"] == "json", "the second model must be the JSON one"
    add_move_tasks(query, js)
    # Newer botocore picks the first protocol of "protocols" it speaks: name only the one.
    query["metadata"]["protocols"] = ["query"]
    js["metadata"]["protocols"] = ["json"]
    here = os.path.dirname(os.path.abspath(__file__))
    write(query, os.path.join(here, "query", "sqs", "2012-11-05", "service-2.json"))
    write(js, os.path.join(here, "json", "sqs", "2012-11-05", "service-2.json"))


if __name__ == "__main__":
    main()
