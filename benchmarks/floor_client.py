"""The floor of a reader that asks GitLab: python, http.client, the given requests on one
keep-alive connection, and their parse (each answer decoded; the marker regex over every note
body in it).

    python3 benchmarks/floor_client.py '{"url": "http://127.0.0.1:8080", "token": "...",
                                         "paths": ["/api/v4/projects/1", ...]}'

``paths`` are GETs; ``requests`` instead lists each call as {"method", "target", "body"} (a
POST's JSON body, such as a GraphQL query). What benchmarks/run.py times against the hook's
merge decision and ``pairgate status``.
"""

import http.client
import json
import re
import sys
from urllib.parse import urlsplit

MARKER = re.compile(r"^<!-- mochi-task:(\S+) (.*) -->[ \t]*$", re.MULTILINE)


def main() -> None:
    spec = json.loads(sys.argv[1])
    where = urlsplit(spec["url"])
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    calls = spec.get("requests") or [{"method": "GET", "target": p} for p in spec["paths"]]
    for call in calls:
        headers = {"PRIVATE-TOKEN": spec["token"]}
        body = None
        if call.get("body") is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(call["body"]).encode()
        conn.request(call["method"], call["target"], body=body, headers=headers)
        answer = json.loads(conn.getresponse().read())
        for item in answer if isinstance(answer, list) else [answer]:
            found = MARKER.search(str(item.get("body") or "")) if isinstance(item, dict) else None
            if found:
                json.loads(found.group(2))


if __name__ == "__main__":
    main()
