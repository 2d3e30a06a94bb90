"""How glab reads its arguments: flags, the merge endpoints, the project and the merge request."""

from __future__ import annotations

import posixpath
import re
import urllib.parse
from collections.abc import Mapping, Sequence

from pairgate.standalone.command_reader.words import DYNAMIC, Word, literal_word

__all__ = [
    "ALIAS_SET_FLAGS",
    "API_FLAGS",
    "MERGE_FLAGS",
    "NOTE_FLAGS",
    "UPDATE_FLAGS",
    "GlabCall",
    "api_fields",
    "api_route",
    "attribute",
    "attribute_endpoint",
    "cobra",
    "cobra_traverse",
    "host_readings",
    "is_merge_word",
    "mr_endpoint",
    "normalise_repo",
]


class GlabCall:
    """One glab invocation as it is read: its text, the words read as glab's own, the project
    -R named before the subcommand, the command's assignments, and whether xargs adds more.
    (A plain class: the reader fills ``repo`` in as it reads the flags.)"""

    __slots__ = ("env", "open_args", "repo", "structural", "words")

    def __init__(
        self,
        words: str,
        structural: list[Word],
        repo: Word | None,
        env: dict[str, Word],
        open_args: bool,
    ) -> None:
        self.words = words
        self.structural = structural
        self.repo = repo
        self.env = env
        self.open_args = open_args


# Every spelling of the flags glab accepts, as (long name, takes a value).
MERGE_FLAGS: dict[str, tuple[str, bool]] = {
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
API_FLAGS: dict[str, tuple[str, bool]] = {
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


class _Flags:
    """Arguments read with cobra's rules. ``values`` and ``spelled`` are keyed by long name;
    ``unclear`` holds the indexes of words an unknown flag might take as its value."""

    __slots__ = ("help", "positionals", "spelled", "unclear", "values")

    def __init__(self) -> None:
        self.values: dict[str, list[Word | None]] = {}
        self.spelled: dict[str, list[Word]] = {}
        self.positionals: list[tuple[int, Word]] = []
        self.unclear: set[int] = set()
        self.help = False

    def last(self, name: str, default: Word | None) -> Word | None:
        """The flag's value (the last one given wins, as in pflag), else ``default``."""
        given = self.values.get(name)
        return given[-1] if given else default


def cobra(args: list[Word], spec: Mapping[str, tuple[str, bool]]) -> _Flags:
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
                taken: Word | None = literal_word(attached)
                flags.spelled.setdefault(long, []).append(word)
            else:
                taken = args[i + 1] if i + 1 < len(args) else None
                flags.spelled.setdefault(long, []).extend(args[i : i + 2])
                step = 2
            flags.values.setdefault(long, []).append(taken)
        i += step
    return flags


NOTE_FLAGS: dict[str, tuple[str, bool]] = {
    "-m": ("--message", True),
    "--message": ("--message", True),
    "--unique": ("--unique", False),
    "-R": ("--repo", True),
    "--repo": ("--repo", True),
    "-h": ("--help", False),
    "--help": ("--help", False),
}
UPDATE_FLAGS: dict[str, tuple[str, bool]] = {
    **{f: (f, False) for f in ("--draft", "--wip", "--lock-discussion", "--unlock-discussion",
                               "--unassign", "--remove-source-branch", "--squash-before-merge",
                               "--fill-commit-body")},
    **{f: (f, True) for f in ("--title", "--description", "--label", "--unlabel", "--assignee",
                              "--reviewer", "--milestone", "--target-branch", "--repo")},
    "-r": ("--ready", False), "--ready": ("--ready", False), "-t": ("--title", True),
    "-d": ("--description", True), "-l": ("--label", True), "-u": ("--unlabel", True),
    "-a": ("--assignee", True), "-m": ("--milestone", True), "-f": ("--fill", False),
    "--fill": ("--fill", False), "-y": ("--yes", False), "--yes": ("--yes", False),
    "-R": ("--repo", True), "-h": ("--help", False), "--help": ("--help", False),
}  # fmt: skip
ALIAS_SET_FLAGS: dict[str, tuple[str, bool]] = {
    "-s": ("--shell", False),
    "--shell": ("--shell", False),
    "-h": ("--help", False),
    "--help": ("--help", False),
}


def attribute_endpoint(
    project_text: str, iid_text: str, repo: Word | None, env: dict[str, Word]
) -> tuple[str | None, int | None, str]:
    """(project, iid, problem) for a REST merge request endpoint; a placeholder project is
    -R's. The iid must be spelled as GitLab's router takes it, in ASCII digits."""
    project: str | None = project_text
    problem = ""
    if re.search(r":(fullpath|id|repo|namespace|group|user|username)\b", project_text):
        project = _repo_project(repo, env)
        if project is None:
            problem = (
                f"{project_text} is the current directory's project, which the hook does not "
                "guess; spell the project in the path, or pass -R <group/project>"
            )
    iid = int(iid_text) if re.fullmatch(r"[1-9][0-9]*", iid_text) else None
    if iid is None and not problem:
        problem = f"{iid_text!r} is not a merge request iid"
    return project, iid, problem


def is_merge_word(value: str | None) -> bool:
    """merge, accept, and what cobra could complete to them if prefix matching were on."""
    if not value:
        return False
    v = value.lower()
    return "merge".startswith(v) or (len(v) >= 2 and "accept".startswith(v))


def _is_flag_arg(arg: str) -> bool:
    """cobra's isFlagArg: a flag with no value of its own to look for in the next word."""
    return (len(arg) >= 3 and arg[:2] == "--") or (
        len(arg) >= 2 and arg[0] == "-" and arg[1] != "-"
    )


def cobra_traverse(values: Sequence[str | None]) -> int | None:
    """The index of glab's command word among its arguments, as cobra's Command.Traverse finds it
    at the root (spf13/cobra v1.10.2 command.go), which cmd/glab/main.go uses to decide whether
    the first argument is an alias: -1 when there is none, None when a word bash computes stands
    where a flag or the command word could. At the root only -v/--version is a flag of its own
    without a value (internal/commands/root.go): Traverse takes the word after any other flag as
    that flag's value."""
    in_flag = False
    for i, value in enumerate(values):
        if value is None:
            if not in_flag:
                return None
            in_flag = False
        elif value.startswith("--") and "=" not in value:
            in_flag = value != "--version"
        elif value.startswith("-") and "=" not in value and len(value) == 2:
            in_flag = value != "-v"
        elif in_flag:
            in_flag = False
        elif not _is_flag_arg(value):
            return i
    return -1


_GLAB_PLACEHOLDER = re.compile(
    r":(group/:namespace/:repo|namespace/:repo|fullpath|id|user|username|group|namespace|repo"
    r"|branch)\b"
)


def api_fields(flags: _Flags) -> tuple[dict[str, str | None], bool]:
    """``glab api``'s parameters as glab builds them (api.go parseFields): each -f/--raw-field,
    then each -F/--field, later ones replacing earlier ones. A value the hook cannot read
    (``@file``, a placeholder, an expansion) is None; the second value says some parameter or
    the body cannot be read at all (a field built from expansions, ``--input``)."""
    fields: dict[str, str | None] = {}
    opaque = "--input" in flags.values
    for name in ("--raw-field", "--field"):
        for word in flags.values.get(name, []):
            first = word.parts[0] if word is not None and word.parts else DYNAMIC
            if word is not None and word.value is not None:
                key, eq, value = word.value.partition("=")
                if eq:
                    magic = name == "--field" and (
                        value.startswith("@") or _GLAB_PLACEHOLDER.search(value)
                    )
                    fields[key] = None if magic else value
            elif isinstance(first, str) and "=" in first:
                fields[first.partition("=")[0]] = None
            else:
                opaque = True
    return fields, opaque


def api_route(endpoint: str) -> tuple[str, list[str], list[tuple[str, str]]]:
    """(kind, path segments after /api/v4, query parameters) for a ``glab api`` endpoint, read as
    glab builds the URL (internal/commands/api/http.go): exactly ``graphql`` is
    <host>/api/graphql; an endpoint with ``://`` is the whole URL (any scheme spelling, any host,
    GitLab under a relative root); anything else follows the API's base URL, /api/v4/. Segments
    are percent-decoded, and ``.`` and ``..`` resolved as the web server resolves them. kind is
    "graphql", "rest", or "other" (not GitLab's API)."""
    if endpoint == "graphql":
        return "graphql", [], []
    absolute = "://" in endpoint
    text = endpoint.split("#", 1)[0]
    if absolute:
        after = text.split("://", 1)[1]
        text = "/" + after.split("/", 1)[1] if "/" in after else "/"
    path, _, query_text = text.partition("?")
    segments: list[str] = [] if absolute else ["api", "v4"]
    for segment in (urllib.parse.unquote(s) for s in path.split("/")):
        if segment == "..":
            segments = segments[:-1]
        elif segment not in ("", "."):
            segments.append(segment)
    if segments:  # Grape routes answer with a format suffix too: .../merge.json
        segments[-1] = re.sub(r"\.\w+$", "", segments[-1])
    query = urllib.parse.parse_qsl(query_text, keep_blank_values=True)
    lowered = [s.lower() for s in segments]
    for k in range(len(lowered) - 1):
        if lowered[k] != "api":
            continue
        if lowered[k + 1] == "graphql" and k + 2 == len(lowered):
            return "graphql", [], query
        if lowered[k + 1] == "v4":
            return "rest", segments[k + 2 :], query
    return "other", segments, query


def mr_endpoint(segments: list[str]) -> tuple[str, str, str] | None:
    """(kind, project, iid) when API segments name a merge request's merge ("merge"), its entry
    on a merge train ("train"), its notes ("notes", "discussions", "draft_notes": a note may
    carry a /merge quick action) or the merge request itself ("mr": its description may)."""
    lowered = [s.lower() for s in segments]
    if not lowered or lowered[0] != "projects":
        return None
    for k in range(2, len(lowered) - 1):
        if lowered[k] != "merge_requests":
            continue
        iid, tail = segments[k + 1], lowered[k + 2 :]
        if k >= 3 and lowered[k - 1] == "merge_trains":
            if not tail:
                return "train", "/".join(segments[1 : k - 1]), iid
            continue
        project = "/".join(segments[1:k])
        if tail == ["merge"]:
            return "merge", project, iid
        if not tail:
            return "mr", project, iid
        if tail[0] in ("notes", "draft_notes") and len(tail) <= 2:
            return tail[0], project, iid
        if tail[0] == "discussions" and (len(tail) <= 2 or (tail[2] == "notes" and len(tail) <= 4)):
            return "discussions", project, iid
    return None


def normalise_repo(text: str) -> str | None:
    """-R takes OWNER/REPO, GROUP/NAMESPACE/REPO, a URL or a Git URL; the project's full path."""
    text = text.strip()
    m = re.match(r"^[\w.+-]+@[^:/]+:(.+)$", text)  # git@host:group/proj.git
    if m:
        text = m.group(1)
    else:
        text = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]+/", "", text, flags=re.IGNORECASE)
    text = text.strip("/")
    if "/." in f"/{text}":  # git and curl resolve . and .. in a URL's path (RFC 3986), and
        text = posixpath.normpath(f"/{text}").lstrip("/")  # a .. above the root goes nowhere
    text = text[:-4] if text.endswith(".git") else text
    text = text.split("/-/", 1)[0]
    if re.fullmatch(r"[\w.-]+(/[\w.-]+)+", text):
        return text
    return None


def _repo_project(repo: Word | None, env: dict[str, Word]) -> str | None:
    """The project -R names, else GITLAB_REPO set on the command itself (glab reads both)."""
    source = repo if repo is not None else env.get("GITLAB_REPO")
    if source is None or source.value is None:
        return None
    return normalise_repo(source.value)


def host_readings(project: str | None) -> tuple[str | None, ...]:
    """The projects glab may take ``a/b/c`` for: the group path a/b/c, or project b/c on host a
    (glab's choice depends on the hosts it is logged in to, which the hook cannot see), so a
    merge named so is gated as both."""
    if project is not None and project.count("/") >= 2:
        return (project, project.split("/", 1)[1])
    return (project,)


# internal/cmdutils/url_parser.go (mergeRequestURLPathRE), on the path Go's url.Parse gives.
_GLAB_MR_PATH = re.compile(r"^(/(?:[^-][^/]+/){2,})+(?:-/)?merge_requests/([0-9]+)(?:/.*)?$", re.S)
_GO_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def _glab_mr_url(text: str) -> tuple[str, int] | None:
    """(project, iid) when glab reads ``text`` as a merge request's URL
    (cmdutils.ParseMergeRequestFromURL, glrepo.FromURL): Go's url.Parse (the scheme is read in
    any case; none, http or https is accepted; ``//host/path`` has a host too), the path pattern
    above, and a host glab can name."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return None  # net/url refuses control characters
    rest = text.split("#", 1)[0]
    scheme = ""
    m = _GO_SCHEME.match(rest)
    if m:
        scheme, rest = m.group(1).lower(), rest[m.end() :]
    if scheme not in ("", "http", "https"):
        return None
    rest = rest.split("?", 1)[0]
    if not rest.startswith("//") or (not scheme and rest.startswith("///")):
        return None  # no host: glrepo.FromURL refuses it
    authority, slash, path = rest[2:].partition("/")
    host = authority.rpartition("@")[2]
    hostname = host[1 : host.find("]")] if host.startswith("[") else host.split(":", 1)[0]
    if not hostname or re.search(r"[\s\"<>\\^`{|}]|%(?![0-9A-Fa-f]{2})", host):
        return None
    if re.search(r"%(?![0-9A-Fa-f]{2})", path):
        return None  # net/url refuses a bad escape
    found = _GLAB_MR_PATH.match(urllib.parse.unquote(slash + path, errors="surrogateescape"))
    if found is None or not 0 < int(found.group(2)) < 2**63:
        return None
    return found.group(1).strip("/"), int(found.group(2))


def _go_atoi(text: str) -> int | None:
    """Go's strconv.Atoi: an optional sign and ASCII digits, within int64 (a full-width digit
    is not a digit to Go, whatever Python's int() says)."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def attribute(
    positionals: list[tuple[int, Word]],
    unclear: set[int],
    repo: Word | None,
    env: dict[str, Word],
    open_args: bool,
) -> tuple[str | None, int | None, str]:
    """(project, iid, problem) for ``glab mr merge``'s (or ``note``'s) arguments, read as
    mrutils.MRFromArgsWithOpts reads them: a merge request URL, else ``strconv.Atoi`` of the
    argument without one leading ``!``, else a branch name."""
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
                "no merge request named: glab would take the current branch's merge request, "
                "which the hook does not guess; name it by its iid"
            ),
        )
    value = positionals[0][1].value
    if value is None:
        return project, None, "the merge request is built from variables or substitutions"
    url = _glab_mr_url(value)
    if url is not None:
        from_url, iid = url
        if project is not None and project != from_url:
            return None, None, f"-R names {project} but the URL names {from_url}"
        return from_url, iid, ""
    number = _go_atoi(value.removeprefix("!"))
    if number is None:
        return (
            project,
            None,
            (
                f"{value!r} names a branch, not a merge request (glab reads a number as Go "
                "does: ASCII digits only); name the merge request by its iid"
            ),
        )
    if number <= 0:
        return project, None, f"{value!r} is not a merge request glab can take"
    if project is None:
        return (
            None,
            number,
            (
                "no project named: glab would use the current directory's repository (or "
                "GITLAB_REPO), which the hook does not guess; pass -R <group/project>"
            ),
        )
    return project, number, ""
