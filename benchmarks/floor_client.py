"""The floor of a reader that asks GitLab: python, http.client, the given GETs on one keep-alive
connection, and their parse (each answer decoded; the marker regex over every note body in it).

    python3 benchmarks/floor_client.py '{"url": "http://127.0.0.1:8080", "token": "...",
                                         "paths": ["/api/v4/projects/1", ...]}'

What benchmarks/run.py times against the hook's merge decision and ``pairgate status``.
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
    for path in spec["paths"]:
        conn.request("GET", path, headers={"PRIVATE-TOKEN": spec["token"]})
        answer = json.loads(conn.getresponse().read())
        for item in answer if isinstance(answer, list) else [answer]:
            found = MARKER.search(str(item.get("body") or "")) if isinstance(item, dict) else None
            if found:
                json.loads(found.group(2))


if __name__ == "__main__":
    main()
