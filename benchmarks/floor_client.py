"""The floor of a reader that asks GitLab: python, http.client, the given requests on one
keep-alive connection, and their parse (each answer decoded; for every note in it the marker
regex, and for every record found its JSON decoded, re-encoded canonically and hashed, as the
digest check does).

    python3 benchmarks/floor_client.py '{"url": "http://127.0.0.1:8080", "token": "...",
                                         "paths": ["/api/v4/projects/1", ...]}'

``paths`` are GETs; ``requests`` instead lists each call as {"method", "target", "body"} (a
POST's JSON body, such as a GraphQL query). With ``"threads": N`` the calls go out from N threads,
each with a keep-alive connection of its own (board's readers). With ``"hook_input": true`` it first reads the
merge hook's JSON on stdin and parses its command with tree-sitter-bash, as the hook's reader
does. What benchmarks/run.py times against the hook's merge decision (started from bash, as the
hook is: benchmarks/hook.py) and ``pairgate status``.
"""

import hashlib
import http.client
import json
import re
import sys
from urllib.parse import urlsplit

MARKER = re.compile(r"^<!-- mochi-task:(\S+) (.*) -->[ \t]*$", re.MULTILINE)
CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def parse_command(text: str) -> None:
    import tree_sitter
    import tree_sitter_bash

    command = json.loads(text)["tool_input"]["command"]
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    parser.parse(command.encode())


def digest(body: str) -> None:
    found = MARKER.search(body)
    if found is None:
        return
    record = json.loads(found.group(2))
    record.pop("digest", None)
    human = body[: found.start()] + body[found.end() :]
    text = CANONICAL.encode(
        {"kind": found.group(1), "record": record, "text": " ".join(human.split())}
    )
    hashlib.sha256(text.encode("ascii")).hexdigest()


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec.get("hook_input"):
        parse_command(sys.stdin.read())
    where = urlsplit(spec["url"])
    calls = spec.get("requests") or [{"method": "GET", "target": p} for p in spec["paths"]]

    def call(conn: http.client.HTTPConnection, one: dict) -> None:
        headers = {"PRIVATE-TOKEN": spec["token"]}
        body = None
        if one.get("body") is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(one["body"]).encode()
        conn.request(one["method"], one["target"], body=body, headers=headers)
        answer = json.loads(conn.getresponse().read())
        for item in answer if isinstance(answer, list) else [answer]:
            if isinstance(item, dict):
                digest(str(item.get("body") or ""))

    def connect() -> http.client.HTTPConnection:
        return http.client.HTTPConnection(where.hostname, where.port, timeout=30)

    threads = int(spec.get("threads") or 1)
    if threads == 1:  # no thread module imported: the single-connection floors pay for none
        conn = connect()
        for one in calls:
            call(conn, one)
        return
    import threading
    from concurrent.futures import ThreadPoolExecutor

    local = threading.local()

    def threaded(one: dict) -> None:
        if not hasattr(local, "conn"):
            local.conn = connect()
        call(local.conn, one)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(threaded, calls))


if __name__ == "__main__":
    main()
