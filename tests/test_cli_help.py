"""What --help says: the getting-started commands first, which commands read no configuration,
every positional with its help, and a subcommand that may be left out in brackets."""

from __future__ import annotations

from tests.kit.run import PAIRGATE, run_program


def help_of(*argv: str) -> str:
    result = run_program([*PAIRGATE, *argv, "--help"], env={})
    assert result.code == 0, result.err
    return result.out


def test_the_getting_started_commands_come_first() -> None:
    listing = help_of().split("positional arguments:\n  <command>\n", 1)[1]
    listed = [
        line.split()[0]
        for line in listing.splitlines()
        if line.startswith("    ") and not line.startswith("     ")
    ]
    assert listed[:4] == ["demo", "sandbox", "init", "claim"]


def test_the_help_names_every_command_that_reads_no_configuration() -> None:
    assert " ".join(help_of().split()).endswith(
        "--help and --version read no configuration, nor do demo, sandbox, init and deploy-hooks "
        "--list; inbox reads it itself (so that as a Claude Code hook it never exits 2); every "
        "other command reads it first."
    )


def test_withdraw_names_its_issue_as_every_verb_does() -> None:
    text = help_of("withdraw")
    assert text.split("\n\n", 1)[0].endswith(" ISSUE")
    assert (
        "positional arguments:\n  ISSUE               the tracker issue's number (its iid, as in #12)\n"
        in (text)
    )


def test_inbox_ack_is_shown_as_optional() -> None:
    usage = help_of("inbox").split("\n\n", 1)[0]
    assert usage.endswith("[ack ...]")
    assert " ack ..." not in usage.replace("[ack ...]", "")
