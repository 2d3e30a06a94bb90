"""Random ledger trails for comparing two folds: mostly records a verb could have written, mixed
with everything a trail meets (comments, system notes, forged, tampered, edited, duplicated,
reordered, malformed and out-of-chain notes). Deterministic for a seed."""

from __future__ import annotations

import json
from random import Random
from typing import Any

from pairgate.standalone.records import constraint_id, marker, record_digest

AGENTS = ("acme-lead", "acme-review", "acme-solo", "acme-finder", "acme-lead-2", "acme-review-x")
AUTHOR, MAINTAINER = 10, 13
SHAS = ("a" * 40, "b" * 40)
STAMP = "2026-01-01T00:00:{:02d}.000Z"


def _fields(event: str, rng: Random, ids: list[int], offers: list[int]) -> dict[str, Any]:
    agent = rng.choice(AGENTS)
    pick = lambda pool: rng.choice(pool) if pool and rng.random() < 0.85 else rng.randint(1, 500)  # noqa: E731
    role = {"role": rng.choice(("lead", "review"))}
    offer = {
        "to": rng.choice(AGENTS),
        **role,
        "sha": rng.choice(SHAS),
        "mr": {"project": rng.choice(("acme/app", "acme/lib")), "iid": rng.randint(1, 3)},
        "reason": rng.choice((None, "please review", "")),
        "supersedes": pick(offers) if rng.random() < 0.2 else None,
    }
    text = rng.choice(("No force pushes.", "Keep   it  green.", "Review every SQL change."))
    fields = {
        "claim": role,
        "handoff": offer,
        "accept": {"offer": pick(offers), "from": rng.choice(AGENTS), **role},
        "decline": {"offer": pick(offers), "from": rng.choice(AGENTS)},
        "release": role,
        "close": {},
        "approve": {
            **offer,
            "not_covering": rng.choice(([], ["docs"], ["a", "b"])),
            "self_approval": rng.random() < 0.1,
        },
        "freeze": {
            "scope": rng.choice(("board", "issue:5", "mr:acme/app!2")),
            "reason": "release day",
            "minutes": rng.choice((1, 60, 10080)),
        },
        "thaw": {"freeze": pick(ids)},
        "impose": {
            "id": constraint_id(text) if rng.random() < 0.9 else "c-000000000000",
            "text": text,
        },
    }[event]
    return {"event": event, "agent": agent, **fields}


KINDS = {
    "claim": "ownership",
    "handoff": "ownership",
    "accept": "ownership",
    "decline": "ownership",
    "release": "ownership",
    "close": "ownership",
    "approve": "approval",
    "freeze": "freeze",
    "thaw": "freeze",
    "impose": "constraint",
}
WEIGHTS = {"claim": 3, "handoff": 4, "accept": 3, "decline": 2, "release": 2, "close": 1}
WEIGHTS |= {"approve": 3, "freeze": 1, "thaw": 1, "impose": 1}


def _body(kind: str, record: dict[str, Any], human: str) -> tuple[str, str]:
    sealed = {"v": 1, **record}
    sealed["digest"] = record_digest(kind, sealed, human)
    return f"{human}\n\n{marker(kind, sealed)}\n", sealed["digest"]


def trail(seed: int, size: int) -> list[dict[str, Any]]:
    """``size`` notes as GitLab's API gives them (dicts for Note.from_api)."""
    rng = Random(seed)
    notes: list[dict[str, Any]] = []
    digests: list[str] = []
    write_ids: list[str] = []
    offers: list[int] = []
    note_id = rng.randint(1, 50)
    story: dict[str, Any] = {"holder": None, "offer": None}  # who took it last; the last offer
    for n in range(size):
        note_id += rng.choice((1, 1, 1, 2, 7))
        author, system = AUTHOR, False
        created = updated = STAMP.format(n % 60)
        event = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
        kind = KINDS[event]
        record = _fields(event, rng, [x["id"] for x in notes], offers)
        # Seven times in ten a record follows the story so far, as verbs write them: an answer
        # to the latest offer by its receiver, an offer or a release by whoever took the issue
        # last, a claim by an agent that may claim. Otherwise few offers would ever be taken
        # (a random answer names the pending offer by chance), and the rules that apply an
        # answer would go untested.
        follows = rng.random() < 0.7
        if follows:
            if event in ("accept", "decline") and story["offer"]:
                offer_note, sender, receiver, role = story["offer"]
                record |= {"offer": offer_note, "agent": receiver, "from": sender}
                if event == "accept":
                    record["role"] = role
            elif event == "claim":
                record["agent"] = rng.choice(AGENTS[:3])  # no finder: it never claims
            elif event in ("handoff", "approve", "release") and story["holder"]:
                record["agent"] = story["holder"]
                if event != "release":
                    record["supersedes"] = story["offer"][0] if story["offer"] else None
        record["write_id"] = (
            rng.choice(write_ids)
            if write_ids and rng.random() < 0.04
            else f"{rng.getrandbits(128):032x}"
        )
        record["session"] = "s"
        record["prev"] = (
            digests[-1]
            if digests and rng.random() < 0.8
            else rng.choice([None, f"{rng.getrandbits(256):064x}", *digests[-3:]])
        )
        human = rng.choice(("", f"{record['agent']} {event}", "Line one.\n\nLine  two.  "))
        body, digest = _body(kind, record, human)
        twist = rng.random()
        if twist < 0.06:
            body = rng.choice(("A comment.", "see <!-- mochi-task: inline -->", "/close"))
        elif twist < 0.09:
            author = MAINTAINER  # forged
        elif twist < 0.11:
            system = True
        elif twist < 0.14:
            body = body.replace(human or "\n\n", (human or "") + " changed\n\n", 1)  # tampered
        elif twist < 0.16:
            body = body + body  # two markers
        elif twist < 0.19:  # a schema problem, digest resealed
            broken = dict(record)
            broken[rng.choice(list(broken))] = rng.choice((None, 0, "", "x" * 5, [1], True))
            body, _ = _body(kind, broken, human)
        elif twist < 0.21:
            body = body.replace('{"v":1', '{"v":1,', 1)  # JSON that does not parse
        elif twist < 0.23:
            body = body.replace(f"mochi-task:{kind} ", "mochi-task:bogus ", 1)
        elif twist < 0.26:  # the digest not last: keys reordered, sealed alike
            sealed = json.loads(body.rsplit("mochi-task:", 1)[1].split(" ", 1)[1][: -len(" -->\n")])
            reordered = {"digest": sealed.pop("digest"), **dict(reversed(sealed.items()))}
            body = f"{human}\n\n<!-- mochi-task:{kind} {json.dumps(reordered)} -->\n"
        elif twist < 0.29:
            body = body.replace("\n", "\r\n") + "  \r\n"
        elif twist < 0.32:
            updated = "2026-01-02T00:00:00.000Z"  # edited
        elif twist < 0.33:
            updated = "not a time"
        digests.append(digest)
        write_ids.append(record["write_id"])
        if event in ("handoff", "approve"):
            offers.append(note_id)
        if follows and twist >= 0.33:  # the story goes on from records no twist touched
            if event in ("handoff", "approve") and story["holder"]:
                story["offer"] = (note_id, record["agent"], record["to"], record["role"])
            elif event == "claim" and story["holder"] is None:
                story["holder"] = record["agent"]
            elif event == "accept":
                story["holder"], story["offer"] = record["agent"], None
            elif event == "decline":
                story["offer"] = None
            elif event in ("release", "close") and story["offer"] is None:
                story["holder"] = None
        notes.append(
            {
                "id": note_id,
                "author": {"id": author, "username": f"user{author}"},
                "body": body,
                "created_at": created,
                "updated_at": updated,
                "system": system,
            }
        )
    if rng.random() < 0.3:
        rng.shuffle(notes)  # the fold takes notes in id order, whatever order they come in
    return notes
