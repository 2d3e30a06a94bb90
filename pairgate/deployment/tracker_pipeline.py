"""The tracker-held pipeline: the frame (tracker-pipeline.yml, beside this module) with both
components' jobs written in, their inputs interpolated here as GitLab would at pipeline
creation.

The components are the one source of the gate jobs' text: this module only fills in their
``$[[ inputs.NAME ]]`` blocks, checks every value against the input's declared type and regex
first, and refuses a template it cannot fill exactly (an unknown input, a function other than
``expand_vars`` on a literal, a block left over). Pure functions of text and values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pairgate import yaml_io
from pairgate.standalone.errors import UsageError

COMPONENTS = ("mr-ownership-gate", "mr-merge-check")
# Written in when deploy-pipeline is given an image for it (--evidence-image).
EVIDENCE_COMPONENT = "mr-evidence"
_BLOCK = re.compile(
    r"\$\[\[\s*inputs\.(?P<name>[A-Za-z0-9_-]+)\s*(?P<functions>(?:\|\s*[a-z_]+\s*)*)\]\]"
)
_WHOLE_VALUE = re.compile(r":[ \t]+$")  # a block that is the whole YAML value keeps its type
_SEPARATOR = re.compile(r"^---[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Component:
    """A component template split at its header: the declared inputs and the job text."""

    name: str
    inputs: Mapping[str, Mapping[str, Any]]
    body: str


def parse_component(name: str, text: str) -> Component:
    parts = _SEPARATOR.split(text, maxsplit=1)
    if len(parts) != 2:
        raise UsageError(f"the {name} template has no '---' between its spec and its jobs")
    spec = yaml_io.load(parts[0]) or {}
    inputs = (spec.get("spec") or {}).get("inputs") or {}
    return Component(name, inputs, parts[1].lstrip("\n"))


def checked_inputs(component: Component, given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` completed with defaults, once each value passes its input's declaration."""
    unknown = sorted(set(given) - set(component.inputs))
    if unknown:
        raise UsageError(f"{component.name}: unknown inputs: {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for name, declared in component.inputs.items():
        if name not in given and "default" not in declared:
            raise UsageError(f"{component.name}: the input {name} has no value and no default")
        value = given.get(name, declared.get("default"))
        if declared.get("type", "string") == "array":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise UsageError(f"{component.name}: the input {name} must be a list of strings")
        else:
            if not isinstance(value, str):
                raise UsageError(f"{component.name}: the input {name} must be a string")
            pattern = declared.get("regex")
            if pattern and not re.search(pattern, value):
                raise UsageError(
                    f"{component.name}: the input {name} is {value!r}, which does not match its "
                    f"regex {pattern}"
                )
        values[name] = value
    return values


def interpolate(component: Component, values: Mapping[str, Any]) -> str:
    """The job text with every block filled in."""

    def fill(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in values:
            raise UsageError(f"{component.name}: the template uses an undeclared input {name}")
        value = values[name]
        functions = [f.strip() for f in match.group("functions").split("|") if f.strip()]
        if any(f != "expand_vars" for f in functions) or (functions and "$" in json.dumps(value)):
            raise UsageError(
                f"{component.name}: cannot fill {match.group(0)} with {value!r} here: only "
                "expand_vars of a literal is filled in before GitLab sees the file"
            )
        whole = _WHOLE_VALUE.search(match.string, 0, match.start()) is not None and (
            match.string[match.end() :].split("\n", 1)[0].strip() == ""
        )
        if whole or not isinstance(value, str):
            return json.dumps(value)
        return value

    # Only the text of the current line decides "whole value": search line by line.
    lines = [_BLOCK.sub(fill, line) for line in component.body.splitlines(keepends=True)]
    text = "".join(lines)
    if "$[[" in text:
        raise UsageError(f"{component.name}: an interpolation block was left unfilled")
    return text


def render(
    frame: str,
    components: Sequence[tuple[str, str]],
    values: Mapping[str, Mapping[str, Any]],
    *,
    tracker: str,
    command: str,
) -> str:
    """The tracker-held pipeline: ``frame`` with each component (name, template text) written
    in with ``values[name]``."""
    bodies = []
    for name, text in components:
        component = parse_component(name, text)
        filled = interpolate(component, checked_inputs(component, values[name]))
        bodies.append(
            f"# -- the {name} component's jobs " + "-" * (60 - len(name)) + "\n\n" + filled
        )
    marker = "# <<components>>\n"
    if frame.count(marker) != 1:
        raise UsageError("the tracker pipeline frame has no single '# <<components>>' line")
    out = frame.replace(marker, "\n".join(bodies)).replace("<<tracker_project>>", tracker)
    out = out.replace("<<command>>", command)
    document = yaml_io.load(out)
    if not isinstance(document, dict) or "project-pipeline" not in document:
        raise UsageError("the rendered tracker pipeline is not a CI configuration")
    return out
