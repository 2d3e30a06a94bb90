"""How glab reads its arguments: flags, the merge endpoints, the project and the merge request."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

from pairgate.standalone.command_reader.words import _literal_word, _Word


@dataclass
class _GlabCall:
    """One glab invocation as it is read: its text, the words read as glab's own, the project
    -R named before the subcommand, the command's assignments, and whether xargs adds more."""

    words: str
    structural: list[_Word]
    repo: _Word | None
    env: dict[str, _Word]
    open_args: bool


# Every spelling of the flags glab accepts, as (long name, takes a value).
_MERGE_FLAGS: dict[str, tuple[str, bool]] = {
    "--sha": ("--sha", True),
    "-m": ("--message", True),
    "--message": ("--message", True),
    "--squash-message": ("--squash-message", True),
    "-R": ("--repo", True),
    "--repo": ("--repo", True),
    "-d": ("--remove-source-branch", False),
    "--remove-source-branch": ("--remove-source-branch", False),
    "--auto-merge": ("--auto-merge", False),
    "--when-pipeline-succeeds": ("--when-pipeline-succeeds", False),
    "-s": ("--squash", False),
    "--squash": ("--squash", False),
    "-r": ("--rebase", False),
    "--rebase": ("--rebase", False),
    "-y": ("--yes", False),
    "--yes": ("--yes", False),
    "-h": ("--help", False),
    "--help": ("--help", False),
}
_API_FLAGS: dict[str, tuple[str, bool]] = {
    "-X": ("--method", True),
    "--method": ("--method", True),
    "-F": ("--field", True),
    "--field": ("--field", True),
    "-f": ("--raw-field", True),
    "--raw-field": ("--raw-field", True),
    "-H": ("--header", True),
    "--header": ("--header", True),
    "--input": ("--input", True),
    "--hostname": ("--hostname", True),
    "-R": ("--repo", True),
    "--repo": ("--repo", True),
    "-i": ("--include", False),
    "--include": ("--include", False),
    "--paginate": ("--paginate", False),
    "--silent": ("--silent", False),
    "-h": ("--help", False),
    "--help": ("--help", False),
}


_PFLAG_TRUE = frozenset({None, "1", "t", "T", "true", "TRUE", "True"})


@dataclass
class _Flags:
    """Arguments read with cobra's rules. ``values`` and ``spelled`` are keyed by long name;
    ``unclear`` holds the indexes of words an unknown flag might take as its value."""

    values: dict[str, list[_Word | None]] = field(default_factory=dict)
    spelled: dict[str, list[_Word]] = field(default_factory=dict)
    positionals: list[tuple[int, _Word]] = field(default_factory=list)
    unclear: set[int] = field(default_factory=set)
    help: bool = False

    def last(self, name: str, default: _Word | None) -> _Word | None:
        """The flag's value (the last one given wins, as in pflag), else ``default``."""
        given = self.values.get(name)
        return given[-1] if given else default


def _cobra(args: list[_Word], spec: Mapping[str, tuple[str, bool]]) -> _Flags:
    """Flags anywhere among the arguments, ``--`` ending them, ``--name=value``, ``-Xvalue``
    and clusters of short flags (``-dsy``, ``-ym msg``)."""
    flags = _Flags()
    i, done = 0, False
    while i < len(args):
        word, value = args[i], args[i].value
        if done or value is None or not value.startswith("-") or value == "-":
            flags.positionals.append((i, word))
            i += 1
            continue
        if value == "--":
            done, i = True, i + 1
            continue
        items: list[tuple[str, str | None]] = []
        if value.startswith("--"):
            name, eq, rest = value.partition("=")
            items.append((name, rest if eq else None))
        else:
            letters = value[1:]
            for k, ch in enumerate(letters):
                if letters[k + 1 : k + 2] == "=":  # pflag: -R=acme/app, -h=false
                    items.append(("-" + ch, letters[k + 2 :]))
                    break
                takes = spec.get("-" + ch, ("", False))[1]
                if takes and k + 1 < len(letters):
                    items.append(("-" + ch, letters[k + 1 :]))
                    break
                items.append(("-" + ch, None))
        step = 1
        for spelled, attached in items:
            long, takes = spec.get(spelled, ("", False))
            if not long:
                if attached is None:
                    flags.unclear.add(i + 1)  # an unknown flag: it might take the next word
                continue
            # --help=false runs the command: pflag reads a bool's value with strconv.ParseBool
            flags.help = flags.help or (long == "--help" and attached in _PFLAG_TRUE)
            if not takes:
                flags.spelled.setdefault(long, []).append(word)
                continue
            if attached is not None:
                taken: _Word | None = _literal_word(attached)
                flags.spelled.setdefault(long, []).append(word)
            else:
                taken = args[i + 1] if i + 1 < len(args) else None
                flags.spelled.setdefault(long, []).extend(args[i : i + 2])
                step = 2
            flags.values.setdefault(long, []).append(taken)
        i += step
    return flags


def _attribute_endpoint(
    project_text: str, iid_text: str, repo: _Word | None, env: dict[str, _Word]
) -> tuple[str | None, int | None, str]:
    """(project, iid, problem) for a REST merge endpoint; a placeholder project is -R's."""
    project: str | None = project_text
    problem = ""
    if re.search(r":(fullpath|id|repo|namespace|group|user|username)\b", project_text):
        project = _repo_project(repo, env)
        if project is None:
            problem = (
                f"{project_text} is the current directory's project, which the hook does not "
                "guess; spell the project in the path, or pass -R <group/project>"
            )
    iid = int(iid_text) if iid_text.isdigit() and int(iid_text) > 0 else None
    if iid is None and not problem:
        problem = f"{iid_text!r} is not a merge request iid"
    return project, iid, problem


def _is_merge_word(value: str | None) -> bool:
    """merge, accept, and what cobra could complete to them if prefix matching were on."""
    if not value:
        return False
    v = value.lower()
    return "merge".startswith(v) or (len(v) >= 2 and "accept".startswith(v))


def _merge_endpoint(endpoint: str) -> tuple[str, str] | None:
    """(project, iid) when a REST endpoint is a merge request's merge or adds it to a train."""
    path = endpoint.split("?", 1)[0].split("#", 1)[0]
    path = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]+", "", path, flags=re.IGNORECASE)
    segments: list[str] = []
    for segment in (urllib.parse.unquote(s) for s in path.split("/")):
        if segment == "..":  # resolved as a URL is, before it reaches the router
            segments = segments[:-1]
        elif segment not in ("", "."):
            segments.append(segment)
    if segments:  # Grape routes answer with a format suffix too: .../merge.json
        segments[-1] = re.sub(r"\.\w+$", "", segments[-1])
    if segments[:2] == ["api", "v4"]:
        segments = segments[2:]
    lowered = [s.lower() for s in segments]
    if not lowered or lowered[0] != "projects":
        return None
    for k in range(2, len(lowered)):
        if lowered[k] != "merge_requests":
            continue
        project = "/".join(segments[1:k])
        if k >= 3 and lowered[k - 1] == "merge_trains":
            project = "/".join(segments[1 : k - 1])
            if len(lowered) == k + 2:
                return project, segments[k + 1]
        if len(lowered) == k + 3 and lowered[k + 2] == "merge":
            return project, segments[k + 1]
    return None


def _normalise_repo(text: str) -> str | None:
    """-R takes OWNER/REPO, GROUP/NAMESPACE/REPO, a URL or a Git URL; the project's full path."""
    text = text.strip()
    m = re.match(r"^[\w.+-]+@[^:/]+:(.+)$", text)  # git@host:group/proj.git
    if m:
        text = m.group(1)
    else:
        text = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]+/", "", text, flags=re.IGNORECASE)
    text = text.strip("/")
    text = text[:-4] if text.endswith(".git") else text
    text = text.split("/-/", 1)[0]
    if re.fullmatch(r"[\w.-]+(/[\w.-]+)+", text):
        return text
    return None


def _repo_project(repo: _Word | None, env: dict[str, _Word]) -> str | None:
    """The project -R names, else GITLAB_REPO set on the command itself (glab reads both)."""
    source = repo if repo is not None else env.get("GITLAB_REPO")
    if source is None or source.value is None:
        return None
    return _normalise_repo(source.value)


def _host_readings(project: str | None) -> tuple[str | None, ...]:
    """The projects glab may take ``a/b/c`` for: the group path a/b/c, or project b/c on host a
    (glab's choice depends on the hosts it is logged in to, which the hook cannot see), so a
    merge named so is gated as both."""
    if project is not None and project.count("/") >= 2:
        return (project, project.split("/", 1)[1])
    return (project,)


_MR_URL = re.compile(
    r"^(?:[a-z][a-z0-9+.-]*://[^/]+/)?(?P<project>.+?)/-/merge_requests/(?P<iid>\d+)"
)


def _attribute(
    positionals: list[tuple[int, _Word]],
    unclear: set[int],
    repo: _Word | None,
    env: dict[str, _Word],
    open_args: bool,
) -> tuple[str | None, int | None, str]:
    """(project, iid, problem) for ``glab mr merge``'s arguments."""
    if repo is not None and repo.value is None:
        return None, None, "the project (-R) is built from variables or substitutions"
    project = _repo_project(repo, env)
    if repo is not None and project is None:
        return None, None, f"-R {repo.raw} is not a project path the hook can read"
    if open_args:
        return project, None, "xargs appends arguments the hook cannot see"
    if any(index in unclear for index, _ in positionals):
        return project, None, "an unknown flag makes it unclear which word is the merge request"
    if len(positionals) > 1:
        return project, None, "more than one merge request argument"
    if not positionals:
        return (
            project,
            None,
            (
                "no merge request named: glab would merge the current branch's merge request, which "
                "the hook does not guess; name it by its iid"
            ),
        )
    value = positionals[0][1].value
    if value is None:
        return project, None, "the merge request is built from variables or substitutions"
    m = _MR_URL.match(value)
    if m:
        from_url = m.group("project")
        if project is not None and project != from_url:
            return None, None, f"-R names {project} but the URL names {from_url}"
        return from_url, int(m.group("iid")), ""
    digits = value[1:] if value.startswith("!") else value
    if not digits.isdigit() or int(digits) == 0:
        return (
            project,
            None,
            (f"{value!r} names a branch, not a merge request; name the merge request by its iid"),
        )
    if project is None:
        return (
            None,
            int(digits),
            (
                "no project named: glab would use the current directory's repository (or "
                "GITLAB_REPO), which the hook does not guess; pass -R <group/project>"
            ),
        )
    return project, int(digits), ""
