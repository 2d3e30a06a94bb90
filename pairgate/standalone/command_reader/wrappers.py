"""Programs that run another program: env, sudo, timeout, xargs, getopt and git's own."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import NamedTuple

from pairgate.standalone.command_reader.words import DYNAMIC, Word, literal_word

__all__ = [
    "ASSIGNMENT",
    "AUTO_MERGE_TEXT",
    "COPY_OPTS",
    "DOAS_OPTS",
    "FLOCK_OPTS",
    "GIT_CONFIG_OPTS",
    "GIT_PUSH_OPTS",
    "MAKE_OPTS",
    "RUNUSER_OPTS",
    "SCRIPT_OPTS",
    "SUDO_OPTS",
    "SU_OPTS",
    "TEE_OPTS",
    "TMUX_OPTS",
    "arms_auto_merge",
    "env_split",
    "getopt",
    "git_env_config",
    "git_setting",
    "makefile_commands",
    "push_option",
    "tmux_lookup",
    "unwrap",
]

# For each wrapper: the options that take a value (the next word, or attached), and how many
# operands come before the command (timeout's duration).
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (frozenset({"-i", "--input", "-o", "--output", "-e", "--error"}), 0),
    "setsid": (frozenset(), 0),
    "coproc": (frozenset(), 0),
    "sudo": (
        frozenset(
            {
                "-u",
                "--user",
                "-g",
                "--group",
                "-h",
                "--host",
                "-p",
                "--prompt",
                "-r",
                "--role",
                "-t",
                "--type",
                "-U",
                "--other-user",
                "-C",
                "--close-from",
                "-D",
                "--chdir",
                "-T",
                "--command-timeout",
                "-R",
                "--chroot",
            }
        ),
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-P"}), 0),
    "xargs": (
        frozenset(
            {
                "-a",
                "--arg-file",
                "-d",
                "--delimiter",
                "-E",
                "-I",
                "-L",
                "--max-lines",
                "-n",
                "--max-args",
                "-P",
                "--max-procs",
                "-s",
                "--max-chars",
                "--process-slot-var",
            }
        ),
        0,
    ),
}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def unwrap(program: str, argv: list[Word], env: dict[str, Word]) -> tuple[list[Word], bool] | None:
    """(the wrapped command, whether more arguments may be appended) when ``argv`` is a wrapper,
    else None. ``env`` gains the assignments env and sudo make."""
    if program not in WRAPPERS:
        return None
    if program == "env" and env_split(argv) is not None:
        return None
    takes_value, operands = WRAPPERS[program]
    i = 1
    while i < len(argv):
        value = argv[i].value
        if value is None:
            break
        if value == "--":
            i += 1
            break
        if program in ("env", "sudo") and ASSIGNMENT.match(value):
            name, _, rest = value.partition("=")
            env[name] = literal_word(rest)
            i += 1
            continue
        if not value.startswith("-") or value == "-":
            if program == "env" and value == "-":
                i += 1
                continue
            break
        if program == "nice" and re.fullmatch(r"-\d+", value):
            i += 1
            continue
        name = value.split("=", 1)[0]
        if name in takes_value and "=" not in value:
            i += 2
            continue
        if not value.startswith("--") and value[:2] in takes_value:
            i += 1  # -n10, -uNAME: the value is attached
            continue
        i += 1
    i += operands
    return argv[i:], program == "xargs"


def env_split(argv: list[Word]) -> list[Word] | None:
    """``env -S STRING``: env splits the string into the command line itself."""
    for i, word in enumerate(argv[1:], start=1):
        value = word.value or ""
        if value in ("-S", "--split-string") and i + 1 < len(argv):
            return argv[i + 1 :]
        if value.startswith("--split-string="):
            return [literal_word(value.split("=", 1)[1]), *argv[i + 1 :]]
        if value.startswith("-S") and len(value) > 2:
            return [literal_word(value[2:]), *argv[i + 1 :]]
        if not value.startswith("-") and not ASSIGNMENT.match(value):
            return None
    return None


class Opts(NamedTuple):
    """A program's options as getopt_long reads them: ``short`` in getopt's notation ("c:" takes
    a value, "t::" an attached one only); ``long`` maps each long name to 0 (no value), 1 (a
    value, after = or in the next word) or 2 (a value after = only), and a unique prefix of a
    long name counts, as getopt_long allows; ``permute``: options may follow operands (GNU's
    default), False stops at the first operand (getopt's "+")."""

    short: str
    long: Mapping[str, int]
    permute: bool = True


def getopt(words: list[Word], spec: Opts) -> tuple[list[tuple[str, Word | None]], list[Word], bool]:
    """(options, operands, unclear): each option as (its letter or long name, its value), and
    whether a word bash computes stands where an option could."""
    takes: dict[str, int] = {}
    k = 0
    while k < len(spec.short):
        colons = len(spec.short[k + 1 :]) - len(spec.short[k + 1 :].lstrip(":"))
        takes[spec.short[k]] = colons
        k += 1 + colons
    options: list[tuple[str, Word | None]] = []
    operands: list[Word] = []
    unclear = False
    i = 0
    while i < len(words):
        word, value = words[i], words[i].value
        if value is None or value == "-" or not value.startswith("-"):
            unclear = unclear or (value is None and word.parts[:1] == (DYNAMIC,))
            operands.append(word)
            i += 1
            if not spec.permute:
                operands += words[i:]
                break
            continue
        if value == "--":
            operands += words[i + 1 :]
            break
        if value.startswith("--"):
            name, eq, attached = value[2:].partition("=")
            matches = [n for n in spec.long if n == name] or [
                n for n in spec.long if n.startswith(name)
            ]
            full = matches[0] if len(matches) == 1 else name
            kind = spec.long.get(full, 0)
            if eq:
                options.append((full, Word((attached,), word.span, word.raw)))
            elif kind == 1:
                options.append((full, words[i + 1] if i + 1 < len(words) else None))
                i += 1
            else:
                options.append((full, None))
            i += 1
            continue
        for j in range(1, len(value)):
            letter = value[j]
            count = takes.get(letter, 0)
            if count and j + 1 < len(value):
                options.append((letter, Word((value[j + 1 :],), word.span, word.raw)))
                break
            if count == 1:
                options.append((letter, words[i + 1] if i + 1 < len(words) else None))
                i += 1
                break
            options.append((letter, None))
        i += 1
    return options, operands, unclear


# Options of the programs that run a shell on one of their arguments, from their manuals and
# sources: util-linux script(1) (term-utils/script.c), su(1)/runuser(1) (login-utils), flock(1)
# (sys-utils/flock.c); sudo(8) (src/parse_args.c); doas(1); tmux(1); GNU make(1); git-push(1),
# git-config(1); coreutils tee(1), cp(1), ln(1), install(1), mv(1).
SCRIPT_OPTS = Opts(
    "aB:c:eE:fI:O:o:qm:T:t::Vh",
    {"append": 0, "command": 1, "echo": 1, "return": 0, "flush": 0, "force": 0, "log-in": 1,
     "log-out": 1, "log-io": 1, "log-timing": 1, "logging-format": 1, "output-limit": 1,
     "quiet": 0, "timing": 2, "version": 0, "help": 0},
)  # fmt: skip
_SU_LONG = {
    "command": 1, "session-command": 1, "fast": 0, "group": 1, "supp-group": 1, "login": 0,
    "preserve-environment": 0, "pty": 0, "shell": 1, "whitelist-environment": 1, "help": 0,
    "version": 0,
}  # fmt: skip
SU_OPTS = Opts("c:fg:G:lmpPs:w:hV", _SU_LONG)
RUNUSER_OPTS = Opts("c:fg:G:lmpPs:u:w:hV", {**_SU_LONG, "user": 1})
SUDO_OPTS = Opts(
    "AbBEeg:h::HiKklnPp:r:sSt:T:u:U:vVC:D:R:",
    {"askpass": 0, "background": 0, "bell": 0, "close-from": 1, "chdir": 1, "preserve-env": 2,
     "edit": 0, "group": 1, "set-home": 0, "help": 0, "host": 1, "login": 0,
     "remove-timestamp": 0, "reset-timestamp": 0, "list": 0, "non-interactive": 0,
     "preserve-groups": 0, "prompt": 1, "chroot": 1, "role": 1, "stdin": 0, "shell": 0,
     "type": 1, "command-timeout": 1, "other-user": 1, "user": 1, "version": 0, "validate": 0},
    permute=False,
)  # fmt: skip
DOAS_OPTS = Opts("a:C:Lnsu:", {}, permute=False)
FLOCK_OPTS = Opts(
    "sexnoFuw:E:hVc:",
    {"shared": 0, "exclusive": 0, "unlock": 0, "nonblock": 0, "nb": 0, "close": 0,
     "no-fork": 0, "timeout": 1, "wait": 1, "conflict-exit-code": 1, "command": 1,
     "verbose": 0, "help": 0, "version": 0},
    permute=False,
)  # fmt: skip
TMUX_OPTS = Opts("2CDlNuvVc:f:L:S:T:", {}, permute=False)
# tmux commands that run a shell command (or type keys into one), with their aliases.
_TMUX_SHELL_COMMANDS = (
    ("new-session", "new", Opts("AdDEPXc:e:f:F:n:s:t:x:y:", {}, permute=False)),
    ("new-window", "neww", Opts("abdkPSc:e:F:n:t:", {}, permute=False)),
    ("split-window", "splitw", Opts("bdefhIPvZc:e:F:l:p:t:", {}, permute=False)),
    ("respawn-window", "respawnw", Opts("kc:e:t:", {}, permute=False)),
    ("respawn-pane", "respawnp", Opts("kc:e:t:", {}, permute=False)),
    ("run-shell", "run", Opts("bCc:d:t:", {}, permute=False)),
    ("display-popup", "popup", Opts("BCEkNb:c:d:e:h:s:S:t:T:w:x:y:", {}, permute=False)),
    ("pipe-pane", "pipep", Opts("IOot:", {}, permute=False)),
    ("if-shell", "if", Opts("bFt:", {}, permute=False)),
    ("send-keys", "send", Opts("FHKlMRXc:N:t:", {}, permute=False)),
)
MAKE_OPTS = Opts(
    "bmBC:deE:f:hiI:j::kl::L::nO::o:pqrRsStvwW:",
    {"always-make": 0, "directory": 1, "debug": 2, "environment-overrides": 0, "eval": 1,
     "file": 1, "makefile": 1, "help": 0, "ignore-errors": 0, "include-dir": 1, "jobs": 2,
     "jobserver-style": 1, "keep-going": 0, "load-average": 2, "check-symlink-times": 0,
     "just-print": 0, "dry-run": 0, "recon": 0, "old-file": 1, "assume-old": 1,
     "output-sync": 2, "print-data-base": 0, "question": 0, "no-builtin-rules": 0,
     "no-builtin-variables": 0, "shuffle": 2, "silent": 0, "quiet": 0, "no-silent": 0,
     "no-keep-going": 0, "stop": 0, "touch": 0, "trace": 0, "version": 0,
     "print-directory": 0, "no-print-directory": 0, "what-if": 1, "new-file": 1,
     "assume-new": 1, "warn-undefined-variables": 0},
)  # fmt: skip
TEE_OPTS = Opts("aip", {"append": 0, "ignore-interrupts": 0, "output-error": 2})
COPY_OPTS = Opts("g:m:o:S:t:", {"target-directory": 1, "suffix": 1, "mode": 1, "owner": 1,
                                   "group": 1, "backup": 2})  # fmt: skip
GIT_CONFIG_OPTS = Opts(
    "f:elz",
    {"global": 0, "system": 0, "local": 0, "worktree": 0, "file": 1, "blob": 1, "add": 0,
     "replace-all": 0, "append": 0, "unset": 0, "unset-all": 0, "get": 0, "get-all": 0,
     "get-regexp": 0, "get-urlmatch": 0, "list": 0, "edit": 0, "remove-section": 0,
     "rename-section": 0, "type": 1, "bool": 0, "int": 0, "bool-or-int": 0, "path": 0,
     "expiry-date": 0, "null": 0, "name-only": 0, "includes": 0, "no-includes": 0,
     "show-origin": 0, "show-scope": 0, "default": 1, "comment": 1, "value": 1,
     "fixed-value": 0, "all": 0, "regexp": 0, "url": 1},
    permute=False,
)  # fmt: skip
GIT_PUSH_OPTS = Opts(
    "46dfnquvo:",
    {"all": 0, "branches": 0, "mirror": 0, "tags": 0, "follow-tags": 0, "delete": 0,
     "prune": 0, "dry-run": 0, "porcelain": 0, "force": 0, "force-with-lease": 2,
     "force-if-includes": 0, "repo": 1, "set-upstream": 0, "thin": 0, "no-thin": 0,
     "quiet": 0, "verbose": 0, "progress": 0, "no-progress": 0, "push-option": 1,
     "no-push-option": 0, "receive-pack": 1, "exec": 1, "recurse-submodules": 1,
     "no-recurse-submodules": 0, "verify": 0, "no-verify": 0, "atomic": 0, "no-atomic": 0,
     "signed": 2, "no-signed": 0, "ipv4": 0, "ipv6": 0},
)  # fmt: skip


def tmux_lookup(name: str) -> tuple[str, Opts] | None:
    """A tmux command that runs a shell, by name, alias or prefix (tmux takes a unique prefix)."""
    for canonical, alias, spec in _TMUX_SHELL_COMMANDS:
        if name in (canonical, alias):
            return canonical, spec
    for canonical, _alias, spec in _TMUX_SHELL_COMMANDS:
        if len(name) >= 2 and canonical.startswith(name):
            return canonical, spec
    return None


def makefile_commands(text: str) -> list[str]:
    """The shell commands a makefile runs, as far as the text says: each recipe line (a line
    that starts with a tab; its @, - and + prefixes dropped), each ``$(shell ...)`` and the right
    side of each ``!=`` assignment. make's own references ($(VAR), ${VAR}, $@) become expansions
    the reader cannot read; ``$$`` is a dollar sign."""
    joined = re.sub(r"\\\r?\n", " ", text)
    commands = []
    for line in joined.split("\n"):
        if line.startswith("\t"):
            commands.append(_make_to_shell(line.lstrip("\t").lstrip("@+- \t")))
        elif "!=" in line:
            commands.append(_make_to_shell(line.split("!=", 1)[1]))
    for m in re.finditer(r"\$([({])shell\s", joined):
        opener, closer, depth, j = m.group(1), ")" if m.group(1) == "(" else "}", 1, m.end()
        while j < len(joined) and depth:
            depth += {opener: 1, closer: -1}.get(joined[j], 0)
            j += 1
        commands.append(_make_to_shell(joined[m.end() : j - 1]))
    return commands


def _make_to_shell(line: str) -> str:
    text, previous = line.replace("$$", "\x00"), None
    while previous != text:  # innermost references first
        previous = text
        text = re.sub(r"\$\([^()$]*\)|\$\{[^{}$]*\}", "\x01", text)
    text = re.sub(r"\$[^\x00\x01]", "\x01", text)
    return text.replace("\x00", "$").replace("\x01", "${MAKE_REFERENCE}")


AUTO_MERGE_TEXT = re.compile(r"merge_when_pipeline_succeeds|auto_merge", re.IGNORECASE)


def push_option(text: str) -> tuple[str, str, str]:
    """(namespace, key, value) of a push option as GitLab reads it (lib/gitlab/push_options.rb:
    ``namespace.key[=value]``, stripped, namespace ``mr`` for ``merge_request``)."""
    m = re.search(r"(?P<namespace>[^.]+)\.(?P<key>[^=]+)=?(?P<value>.*)", text, re.DOTALL)
    if m is None:
        return "", "", ""
    namespace = m.group("namespace").strip().lower()
    namespace = "merge_request" if namespace == "mr" else namespace
    return namespace, m.group("key").strip().lower(), m.group("value")


def arms_auto_merge(text: str) -> bool:
    namespace, key, _ = push_option(text)
    return namespace == "merge_request" and key in ("merge_when_pipeline_succeeds", "auto_merge")


def git_setting(word: Word) -> tuple[str, Word | None]:
    """``git -c name=value``: (the name, lower-cased as git compares it, and the value); "*"
    when bash computes the name."""
    if word.value is not None:
        key, eq, value = word.value.partition("=")
        return key.lower(), Word((value if eq else "true",), word.span, word.raw)
    first = word.parts[0] if word.parts else DYNAMIC
    if isinstance(first, str) and "=" in first:
        return first.partition("=")[0].lower(), None
    return "*", None


def git_env_config(env: Mapping[str, Word]) -> list[tuple[str, Word | None]]:
    """git configuration set on the command through the environment: GIT_CONFIG_COUNT with
    GIT_CONFIG_KEY_<n>/GIT_CONFIG_VALUE_<n>, and GIT_CONFIG_PARAMETERS (git-config(1))."""
    found: list[tuple[str, Word | None]] = []
    if "GIT_CONFIG_PARAMETERS" in env:
        text = env["GIT_CONFIG_PARAMETERS"].value
        try:
            pairs = shlex.split(text) if text is not None else None
        except ValueError:
            pairs = None
        if pairs is None:
            return [("*", None)]
        found += [(p.partition("=")[0].lower(), literal_word(p.partition("=")[2])) for p in pairs]
    count = env.get("GIT_CONFIG_COUNT")
    if count is None:
        return found
    if count.value is None or not re.fullmatch(r"[0-9]+", count.value):
        return [*found, ("*", None)]
    for n in range(min(int(count.value), 100)):
        key = env.get(f"GIT_CONFIG_KEY_{n}")
        if key is None or key.value is None:
            found.append(("*", None))
        else:
            found.append((key.value.lower(), env.get(f"GIT_CONFIG_VALUE_{n}")))
    return found
