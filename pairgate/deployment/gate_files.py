"""The gate a tracker holds: the pipeline deploy-pipeline renders, and the files its jobs fetch.

What deploy-pipeline writes and publishes, and what doctor compares the tracker against, come
from here alone: the inputs (each flag checked: one line, no control character; the image also
no variable), the rendered pipeline (its header records the flags that made it, so doctor can
render it again from the file itself), and the gate directory's files, byte for byte what this
installed pairgate carries: the assembled ownership.py, the three CI validators, and the
deployment's own configuration and automation roster.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from pairgate.deployment.tracker_pipeline import COMPONENTS, EVIDENCE_COMPONENT, render
from pairgate.resources import component_template, package_file, resource_dir
from pairgate.standalone.config import CONFIG_FILENAME, Config
from pairgate.standalone.errors import PairgateError, UsageError
from pairgate.standalone.scope import ROSTER_FILENAME

FRAME = "deployment/tracker-pipeline.yml"
# The gate's files in the tracker repository, by the names the jobs give them.
_GATE_DIR = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\x80-\x9f\u2028\u2029]")
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}")
VALIDATORS = (
    "validate-mr-carries-ownership-record.py",
    "validate-mr-approval-at-head.py",
    "validate-mr-merge-check.py",
)
# The header line the frame's <<command>> becomes: what doctor reads the flags back from.
_HEADER = re.compile(r"^#   (?P<cli>.+?) deploy-pipeline --target FILE (?P<flags>.+)$", re.M)


@dataclass(frozen=True)
class PipelineInputs:
    """The flags a tracker-held pipeline is rendered from (deploy-pipeline's, as recorded)."""

    image: str
    runner_tags: tuple[str, ...]
    read_token_variable: str
    gate_dir: str
    gitlab_url: str
    evidence_image: str | None = None  # the mr-evidence job's, when the pipeline carries it

    def flags(self) -> list[str]:
        out = ["--image", self.image]
        out += [w for t in self.runner_tags for w in ("--runner-tag", t)]
        out += ["--read-token-variable", self.read_token_variable, "--gate-dir", self.gate_dir]
        out += ["--gitlab-url", self.gitlab_url]
        return out + (["--evidence-image", self.evidence_image] if self.evidence_image else [])

    @property
    def where(self) -> str:
        return self.gate_dir.rstrip("/")

    def pinned(self) -> bool:
        return DIGEST.search(self.image) is not None


def one_line(command: str, flag: str, value: str) -> str:
    """``value``, once it is one line of printable text (refused, exit 2, otherwise)."""
    if _CONTROL.search(value) or not value.strip():
        raise UsageError(
            f"{command}: {flag} {value!r} is not one line of printable text (a newline or "
            f"a control character would escape into the pipeline file). Nothing was written."
        )
    return value


def checked_inputs(command: str, inputs: PipelineInputs) -> PipelineInputs:
    """``inputs`` once every value passes: one line, no control character; the image names no
    variable (a variable is resolved by whoever runs the job); the gate directory is a path
    in the tracker repository."""
    values = [("--image", inputs.image), ("--read-token-variable", inputs.read_token_variable)]
    values += [("--runner-tag", t) for t in inputs.runner_tags]
    values += [("--gate-dir", inputs.gate_dir), ("--gitlab-url", inputs.gitlab_url)]
    images = [("--image", inputs.image)]
    if inputs.evidence_image is not None:
        images.append(("--evidence-image", inputs.evidence_image))
    for flag, value in values + images[1:]:
        one_line(command, flag, value)
    for flag, image in images:
        if "$" in image:
            raise UsageError(
                f"{command}: {flag} {image!r} names a variable: GitLab resolves it when the "
                f"job runs, from variables a merge request's pipeline or a project member can "
                f"set, so someone else picks the image the job runs in. Name the image itself, "
                f"pinned by digest (registry/path/image@sha256:<64 hex>). Nothing was written."
            )
    if not _GATE_DIR.fullmatch(inputs.gate_dir) or ".." in inputs.gate_dir.split("/"):
        raise UsageError(
            f"{command}: --gate-dir {inputs.gate_dir!r} is not a path in the tracker "
            "repository (letters, digits, '.', '_', '-' and '/'). Nothing was written."
        )
    return inputs


def unpinned_warning(image: str) -> str | None:
    """Why an image without a digest is a risk, or None for a pinned one."""
    if DIGEST.search(image):
        return None
    return (
        f"warning: --image {image} is not pinned by digest (@sha256:<64 hex>): whoever can push "
        f"that tag (to a registry the CI jobs can push to, any job of the project) replaces "
        f"the image every gate job runs in, and the gate with it. Pin it: "
        f"docker buildx imagetools inspect {image} prints the digest."
    )


def input_values(config: Config, inputs: PipelineInputs) -> dict[str, dict[str, object]]:
    where = inputs.where
    common: dict[str, object] = {
        "image": inputs.image,
        "runner-tags": list(inputs.runner_tags),
        "tracker-project": config.tracker_project,
        "env-prefix": config.env_prefix,
        "read-token-variable": inputs.read_token_variable,
        "reader-path": f"{where}/ownership.py",
        "config-path": f"{where}/{CONFIG_FILENAME}",
        "roster-path": f"{where}/{ROSTER_FILENAME}",
        "gitlab-url": inputs.gitlab_url,
    }
    values: dict[str, dict[str, object]] = {
        "mr-ownership-gate": {
            **common,
            "record-validator-path": f"{where}/{VALIDATORS[0]}",
            "approval-validator-path": f"{where}/{VALIDATORS[1]}",
        },
        "mr-merge-check": {**common, "merge-check-validator-path": f"{where}/{VALIDATORS[2]}"},
    }
    if inputs.evidence_image is not None:
        keep = ("runner-tags", "tracker-project", "env-prefix", "read-token-variable")
        values[EVIDENCE_COMPONENT] = {
            "image": inputs.evidence_image,
            **{k: common[k] for k in keep},
            "config-path": common["config-path"],
            "gitlab-url": inputs.gitlab_url,
        }
    return values


def rendered(config: Config, command: str, inputs: PipelineInputs) -> bytes:
    """The tracker-held pipeline for ``inputs``; ``command`` prefixes its refusals."""
    try:
        frame = package_file(FRAME).read_text(encoding="utf-8")
        names = [*COMPONENTS, *([EVIDENCE_COMPONENT] if inputs.evidence_image else [])]
        texts = [(name, component_template(name).read_text(encoding="utf-8")) for name in names]
    except OSError as exc:
        raise PairgateError(
            f"{command}: this installation lacks a template it renders "
            f"({exc.strerror or exc}: {exc.filename}). Reinstall pairgate. Nothing was written."
        ) from None
    header = f"{config.cli} deploy-pipeline --target FILE {shlex.join(inputs.flags())}"
    try:
        text = render(
            frame,
            texts,
            input_values(config, inputs),
            tracker=config.tracker_project,
            command=header,
        )
    except UsageError as exc:
        raise UsageError(f"{command}: {exc.message}. Nothing was written.") from None
    return text.encode("utf-8")


def recorded_inputs(text: str) -> PipelineInputs | str:
    """The inputs a pipeline file's header records, or why it records none."""
    match = _HEADER.search(text.split("\n\n", 1)[0])
    if match is None:
        return "its header names no deploy-pipeline command (it was not rendered by pairgate)"
    try:
        words = shlex.split(match["flags"])
    except ValueError as exc:
        return f"its header's deploy-pipeline command does not parse ({exc})"
    found: dict[str, list[str]] = {}
    known = ("--image", "--runner-tag", "--read-token-variable", "--gate-dir", "--gitlab-url")
    optional = ("--evidence-image",)
    if len(words) % 2:
        return "its header's deploy-pipeline command has a flag without a value"
    for flag, value in zip(words[::2], words[1::2], strict=True):
        if flag not in known + optional:
            return f"its header's deploy-pipeline command has an unknown flag {flag}"
        found.setdefault(flag, []).append(value)
    single = [f for f in known if f != "--runner-tag" and len(found.get(f, [])) != 1]
    if single or not found.get("--runner-tag"):
        return f"its header's deploy-pipeline command lacks {', '.join(single or ['--runner-tag'])}"
    twice = [f for f in optional if len(found.get(f, [])) > 1]
    if twice:
        return f"its header's deploy-pipeline command gives {twice[0]} twice"
    return PipelineInputs(
        image=found["--image"][0],
        runner_tags=tuple(found["--runner-tag"]),
        read_token_variable=found["--read-token-variable"][0],
        gate_dir=found["--gate-dir"][0],
        gitlab_url=found["--gitlab-url"][0],
        evidence_image=found.get("--evidence-image", [None])[0],
    )


def first_difference(have: bytes, want: bytes) -> str:
    """Where ``have`` first differs from ``want``: the line number and both lines."""
    ours = have.decode("utf-8", "replace").splitlines()
    theirs = want.decode("utf-8", "replace").splitlines()
    for number, (a, b) in enumerate(zip(ours, theirs, strict=False), start=1):
        if a != b:
            return f"line {number} is {a!r}, where pairgate renders {b!r}"
    if len(ours) != len(theirs):
        number = min(len(ours), len(theirs)) + 1
        if len(ours) > len(theirs):
            return f"line {number} is {ours[number - 1]!r}, past the end pairgate renders"
        return f"it ends at line {number - 1}, where pairgate renders {theirs[number - 1]!r}"
    return "its line endings or final newline differ from what pairgate renders"


def gate_files(config: Config, gate_dir: str) -> dict[str, bytes]:
    """Every file the gate jobs fetch, by its path in the tracker repository: this installed
    pairgate's assembled ownership.py and validators, and the deployment's own configuration
    and roster (beside the configuration, where init writes it)."""
    where = gate_dir.rstrip("/")
    roster = config.path.parent / ROSTER_FILENAME
    sources = {
        "ownership.py": package_file("ownership.py"),
        CONFIG_FILENAME: config.path,
        ROSTER_FILENAME: roster,
    }
    validators = resource_dir("validators")
    sources |= {name: validators / name for name in VALIDATORS}
    files: dict[str, bytes] = {}
    for name, source in sources.items():
        try:
            files[f"{where}/{name}"] = source.read_bytes()
        except OSError as exc:
            raise PairgateError(
                f"pairgate: the gate file {name} cannot be read from {source} "
                f"({exc.strerror or exc}); the roster is the deployment's "
                f"{ROSTER_FILENAME} beside its configuration (init writes one). "
                f"Nothing was written."
            ) from None
    return files


def ci_config_path(pipeline_path: str, config: Config) -> str:
    """The value of each gated project's CI/CD configuration file setting."""
    return f"{pipeline_path}@{config.tracker_project}"


def differing(want: Mapping[str, bytes], have: Mapping[str, bytes | None]) -> list[tuple[str, str]]:
    """(path, "missing" or "differs") for each wanted file the other side lacks or differs in."""
    out = []
    for path, data in want.items():
        there = have.get(path)
        if there is None:
            out.append((path, "missing"))
        elif there != data:
            out.append((path, "differs"))
    return out
