"""The merge hook's command reader (ownership.py section 7): a pure function, read in milliseconds.

Three tables: disguised merges the reader attributes to one project and one merge request (the
gate then decides), disguised merges the reading alone blocks, and harmless commands.
"""

from __future__ import annotations

import pytest

from pairgate.standalone.command_reader.read import read_command
from pairgate.standalone.command_reader.words import CommandReading, could_name_glab_merge

APP = {("acme/app", 12)}

# Each of these runs a merge of acme/app!12; the reader must find exactly that.
ATTRIBUTED: list[tuple[str, set[tuple[str, int]]]] = [
    ("glab mr merge 12 -R acme/app", APP),
    ("glab mr accept 12 -R acme/app", APP),
    ('"glab" mr merge 12 -R acme/app', APP),
    ("gl\\ab mr merge 12 -R acme/app", APP),
    ('g"l"\'a\'b mr "merge" 12 -R acme/app', APP),
    ("$'\\x67lab' mr merge 12 -R acme/app", APP),
    ("$'\\147lab' mr $'\\u006derge' 12 -R acme/app", APP),
    ("glab mr \\\n  merge 12 -R acme/app", APP),
    ("glab \"mr\" 'merge' !12 --repo acme/app", APP),
    ("glab mr merge --repo=acme/app 12", APP),
    ("glab -R acme/app mr merge 12", APP),
    ("glab mr -R acme/app merge 12", APP),
    ("glab mr merge -Racme/app -y 12", APP),
    ("glab mr m 12 -R acme/app", APP),
    ("glab mr merge -dsy -R acme/app 12 --auto-merge", APP),
    ("glab mr merge 12 -R acme/app --auto-merge=false --when-pipeline-succeeds", APP),
    ("glab mr merge 12 -R acme/app --sha 0123abc -m 'ship it'", APP),
    ("glab mr merge 12 -R https://gitlab.example.com/acme/app.git", APP),
    ("glab mr merge 12 -R git@gitlab.example.com:acme/app.git", APP),
    ("glab mr merge https://gitlab.example.com/acme/app/-/merge_requests/12", APP),
    ("GITLAB_REPO=acme/app glab mr merge 12", APP),
    ("FOO=1 BAR=2 glab mr merge 12 -R acme/app", APP),
    ("env -i -u HOME GITLAB_REPO=acme/app glab mr merge 12", APP),
    ("env -S 'glab mr merge 12 -R acme/app'", APP),
    ("command glab mr merge 12 -R acme/app", APP),
    ("builtin glab mr merge 12 -R acme/app", APP),
    ("exec -a x glab mr merge 12 -R acme/app", APP),
    ("sudo -u bot -E glab mr merge 12 -R acme/app", APP),
    ("sudo bash -c 'glab mr merge 12 -R acme/app'", APP),
    ("nohup glab mr merge 12 -R acme/app &", APP),
    ("nice -n 10 glab mr merge 12 -R acme/app", APP),
    ("timeout -s KILL 30 glab mr merge 12 -R acme/app", APP),
    ("time glab mr merge 12 -R acme/app", APP),
    ("stdbuf -oL glab mr merge 12 -R acme/app", APP),
    ("setsid glab mr merge 12 -R acme/app", APP),
    ("doas -u bot glab mr merge 12 -R acme/app", APP),
    ("coproc glab mr merge 12 -R acme/app", APP),
    ("/usr/local/bin/glab mr merge 12 -R acme/app", APP),
    ("./bin/glab mr merge 12 -R acme/app", APP),
    ("$HOME/bin/glab mr merge 12 -R acme/app", APP),
    ("~/bin/glab mr merge 12 -R acme/app", APP),
    ("/tmp/renamed-glab mr merge 12 -R acme/app", APP),
    ("(glab mr merge 12 -R acme/app)", APP),
    ("{ glab mr merge 12 -R acme/app; }", APP),
    ("! glab mr merge 12 -R acme/app", APP),
    ("echo $(glab mr merge 12 -R acme/app)", APP),
    ("echo `glab mr merge 12 -R acme/app`", APP),
    ("cat <(glab mr merge 12 -R acme/app)", APP),
    ('X="${Y:-$(glab mr merge 12 -R acme/app)}"', APP),
    ("cat <<EOF\n$(glab mr merge 12 -R acme/app)\nEOF", APP),
    ("{ echo glab mr merge 12 -R acme/app; } | bash", APP),
    ("shopt -s expand_aliases\nalias g=glab\ng mr merge 12 -R acme/app", APP),
    ("echo hi > >(glab mr merge 12 -R acme/app)", APP),
    ("[[ $(glab mr merge 12 -R acme/app) ]]", APP),
    ('declare -a A=("$(glab mr merge 12 -R acme/app)")', APP),
    ("export X=$(glab mr merge 12 -R acme/app)", APP),
    ("git status | glab mr merge 12 -R acme/app", APP),
    ("cd /tmp; true && glab mr merge 12 -R acme/app || false", APP),
    ("if true; then glab mr merge 12 -R acme/app; fi", APP),
    ("for i in 1; do glab mr merge 12 -R acme/app; done", APP),
    ("while true; do glab mr merge 12 -R acme/app; break; done", APP),
    ("case x in x) glab mr merge 12 -R acme/app;; esac", APP),
    ("f() { glab mr merge 12 -R acme/app; }; f", APP),
    ("[[ -n x ]] && glab mr merge 12 -R acme/app", APP),
    ('bash -c "glab mr merge 12 -R acme/app"', APP),
    ("bash -lc 'glab mr merge 12 -R acme/app'", APP),
    ("sh -c 'glab mr merge 12 -R acme/app' name arg", APP),
    ("zsh -c \"bash -c 'glab mr merge 12 -R acme/app'\"", APP),
    ("dash -e -c 'glab mr merge 12 -R acme/app'", APP),
    ("busybox sh -c 'glab mr merge 12 -R acme/app'", APP),
    ("su -c 'glab mr merge 12 -R acme/app' bot", APP),
    ('eval "glab mr merge 12 -R acme/app"', APP),
    ("eval glab mr merge 12 -R acme/app", APP),
    ("trap 'glab mr merge 12 -R acme/app' EXIT", APP),
    ("bash <<EOF\nglab mr merge 12 -R acme/app\nEOF", APP),
    ("bash <<'EOF'\nglab mr merge 12 -R acme/app\nEOF", APP),
    ("bash <<-EOF\n\tglab mr merge 12 -R acme/app\n\tEOF", APP),
    ("cat <<'EOF' | sh\nglab mr merge 12 -R acme/app\nEOF", APP),
    ('bash <<< "glab mr merge 12 -R acme/app"', APP),
    ('echo "glab mr merge 12 -R acme/app" | bash', APP),
    ("printf 'glab mr merge 12 -R acme/app\\n' | sh", APP),
    ("watch -n 5 glab mr merge 12 -R acme/app", APP),
    ('watch "glab mr merge 12 -R acme/app"', APP),
    ("find . -name x -exec sh -c 'glab mr merge 12 -R acme/app' \\;", APP),
    ("glab api -X PUT projects/acme%2Fapp/merge_requests/12/merge", APP),
    ("glab api -XPUT projects/acme%2Fapp/merge_requests/12/merge", APP),
    ("glab api --method PUT projects/acme%2Fapp/merge_requests/12/merge", APP),
    ("glab api --method=put /projects/acme%2Fapp/merge_requests/12/merge", APP),
    ("glab api projects/acme%2Fapp/merge_requests/12/merge -X PUT", APP),
    ("glab api projects/acme%2Fapp/merge_requests/12/merge -f sha=abc", APP),
    ("glab api -X POST projects/acme%2Fapp/merge_requests/12/merge", APP),
    ("glab api -X PUT projects/acme/app/merge_requests/12/merge", APP),
    ("glab api -X PUT projects/:id/merge_requests/12/merge -R acme/app", APP),
    ("glab api -X PUT projects/:fullpath/merge_requests/12/merge --repo=acme/app", APP),
    ('glab api -X PUT "projects/acme%2Fapp/merge_requests/12/merge?squash=true"', APP),
    (
        "glab api -X PUT https://gitlab.example.com/api/v4/projects/acme%2Fapp/merge_requests/12/merge",
        APP,
    ),
    ("glab api -X PUT projects/acme%2Fapp/merge_requests/12/mer%67e", APP),
    ("glab api -X PUT projects//acme%2Fapp//merge_requests/12/merge/", APP),
    ("glab api -X POST projects/acme%2Fapp/merge_trains/merge_requests/12", APP),
    ("glab api -X PUT projects/42/merge_requests/12/merge", {("42", 12)}),
    ("glab -R acme/app mr merge 12 -R other/app", {("other/app", 12)}),  # the last -R wins
    # glab runs a merge when --help is false; pflag reads -R=acme/app as acme/app
    ("glab mr merge 12 -R acme/app --help=false", APP),
    ("glab mr merge 12 -R acme/app -h=0", APP),
    ("glab mr merge 12 -R=acme/app", APP),
    ("glab -R=acme/app mr merge 12", APP),
    # a line continuation inside a word joins it, as bash joins it before reading words
    ("gl\\\nab mr merge 12 -R acme/app", APP),
    ("glab mr me\\\nrge 12 -R acme/\\\napp", APP),
    ("echo gl\\\nab mr merge 12 -R acme/app | bash", APP),
    # Grape answers the merge endpoint with a format suffix too; a dot segment is resolved
    ("glab api -X PUT projects/acme%2Fapp/merge_requests/12/merge.json", APP),
    ("glab api -X PUT projects/acme%2Fapp/merge_requests/x/../12/merge", APP),
    # an alias defined in the command is read as what it expands to
    ("shopt -s expand_aliases\nalias g='glab mr'\ng merge 12 -R acme/app", APP),
    ("alias x='bash -c'\nx \"gl''ab mr me''rge 12 -R acme/app\"", APP),
    ("alias s='sudo ' g='glab mr'\ns g merge 12 -R acme/app", APP),
    ("alias ls='ls -l'\nls; glab mr merge 12 -R acme/app", APP),
    # a program hash -p (or a link) names glab, with -R before the subcommand
    ("hash -p /usr/bin/gl?b g\ng -R acme/app mr merge 12", APP),
    # glab reads HOST/GROUP/PROJECT when HOST is one it is logged in to: both readings are gated
    (
        "glab mr merge 12 -R gitlab.example.com/acme/app",
        {("gitlab.example.com/acme/app", 12), ("acme/app", 12)},
    ),
    ("GITLAB_REPO=acme/app glab mr merge 12 -R other/app", {("other/app", 12)}),
    (
        "glab mr merge 12 -R acme/app && glab mr merge 13 -R acme/app",
        {("acme/app", 12), ("acme/app", 13)},
    ),
    (
        "glab mr merge 12 -R acme/app; glab api -X PUT projects/outside%2Fapp/merge_requests/3/merge",
        {("acme/app", 12), ("outside/app", 3)},
    ),
]

# Each of these could merge, and the reading alone blocks it: the fragment says why.
BLOCKED: list[tuple[str, str]] = [
    ("G=glab; $G mr merge 12 -R acme/app", "program's name"),
    ("$(echo glab) mr merge 12 -R acme/app", "program's name"),
    ("${TOOL} $SUB 12", "program's name"),
    ("$EDITOR notes.md", "program's name"),
    ('C="glab mr merge 12"; $C -R acme/app', "program's name"),
    ('"${CMD[@]}"', "program's name"),
    ("CMD=(gl''ab mr merge 12 -R acme/app); echo ${#CMD[@]}", "names a glab merge"),
    ("IFS=:; X=glab:mr:merge:12; echo $X", "names a glab merge"),
    ('read -r X <<< "gl""ab mr accept 12"', "names a glab merge"),
    ("glab mr $SUB 12 -R acme/app", "built from variables"),
    ("glab $(echo mr) merge 12 -R acme/app", "built from variables"),
    ("glab mr merge $IID -R acme/app", "merge request is built from variables"),
    ("glab mr merge 12 -R $PROJECT", "project (-R) is built from variables"),
    ("glab mr merge 12", "no project named"),
    ("cd ~/src/app && glab mr merge 12", "no project named"),
    ("glab mr merge -R acme/app", "no merge request named"),
    ("glab mr merge feature-branch -R acme/app", "names a branch"),
    ("glab mr merge 12 13 -R acme/app", "more than one"),
    ("glab mr merge 12 -R other/app https://h/acme/app/-/merge_requests/12", "more than one"),
    ("glab mr merge https://h/acme/app/-/merge_requests/12 -R other/app", "the URL names"),
    ("glab mr merge --frobnicate 12 -R acme/app", "unknown flag"),
    ("glab mr merge 12 -R 'not a path'", "not a project path"),
    ("echo 12 | xargs glab mr merge -R acme/app", "xargs appends"),
    ("xargs -I{} sh -c 'glab mr merge {} -R acme/app' < ids", "names a branch"),
    ("find . -exec glab mr merge {} \\;", "more than one"),
    ("glab api -X PUT projects/:fullpath/merge_requests/12/merge", "current directory's project"),
    ("glab api -X PUT projects/acme%2Fapp/merge_requests/abc/merge", "not a merge request iid"),
    ("glab api -X PUT $ENDPOINT", "endpoint built from variables"),
    ("glab api -X $METHOD projects/acme%2Fapp/merge_requests/12/merge", "HTTP method is built"),
    (
        "glab api graphql -f query='mutation { mergeRequestAccept(input: {iid: \"12\"}) { errors } }'",
        "mergeRequestAccept cannot be attributed",
    ),
    ("glab api graphql -F query=@mutation.graphql", "body the hook cannot read"),
    ("glab api graphql --input mutation.json", "body the hook cannot read"),
    ("glab mm 12", "alias could expand"),
    ('a=gl; alias m="${a}ab mr merge"\nm 12 -R acme/app', "alias built from variables"),
    ("alias $NAME", "alias built from variables"),
    ('echo "$CMD" | bash', "shell reads commands built from variables"),
    ('bash -c "$CMD"', "runs text built from variables"),
    ('bash $OPTS "glab mr merge 12 -R acme/app"', "it could be -c"),
    ('eval "$CMD"', "eval runs text built from variables"),
    ("bash <<EOF\nglab mr merge $IID -R acme/app\nEOF", "merge request is built from variables"),
    ('ls "unterminated; glab mr merge 12 -R acme/app', "would not parse"),
    ("/usr/bin/gl?b mr merge 12 -R acme/app", "program's name"),
    ("g{l,}ab mr merge 12 -R acme/app", "program's name"),
    # a merge quoted in text blocks too: pass such text with --reason-file
    (
        'pairgate handoff 3 --to acme-review --role review --sha abc --reason "then glab mr merge 12"',
        "--reason-file",
    ),
    ('git commit -m "document glab mr merge -R acme/app"', "--reason-file"),
    ("git commit -m \"$(cat <<'EOF'\nExplain glab mr accept 12\nEOF\n)\"", "--reason-file"),
    (
        'glab mr note 12 -m "run glab api -X PUT projects/a%2Fb/merge_requests/1/merge"',
        "names a glab merge",
    ),
    ("cat > notes.md <<'EOF'\nglab mr merge 12 -R acme/app\nEOF", "names a glab merge"),
    ("glab mr view 12 -R acme/app # then glab mr merge 12", "names a glab merge"),
    ("cat <<'EOF'\n$(glab mr merge 12 -R acme/app)\nEOF", "names a glab merge"),
    ('. /dev/stdin <<< "glab mr merge 12 -R acme/app"', "names a glab merge"),
    ('{ echo "glab mr merge 12 -R acme/app"; } | bash', "names a glab merge"),
    ("printf '%s\\n' 'glab mr merge 12 -R acme/app' | bash", "built from variables"),
    ("glab mr merge -- 12 -R acme/app", "more than one"),
    ("xargs -a ids.txt -I % glab mr merge % -R acme/app", "xargs appends"),
    ("python3 -c \"import os; os.system('glab mr merge 12 -R acme/app')\"", "names a glab merge"),
    ("ssh host 'glab mr merge 12 -R acme/app'", "names a glab merge"),
    ("git config alias.m '!gl''ab mr merge'", "names a glab merge"),
]

HARMLESS = [
    "ls -la",
    "git status",
    "cd src && make test",
    "git merge main",
    "git merge --no-ff feature && git push",
    "git log --grep 'merge'",
    'echo "accepted" && ls',
    'python3 -m pytest -q -k "merge"',
    "glab mr view 12 -R acme/app",
    "glab mr list --label 'ready'",
    'glab mr create --fill -t "Merge the parsers" -d "this merges them"',
    "glab mr approve 12 -R acme/app",
    "glab mr note 12 -m 'looks good'",
    "glab issue list --label 'agent::lead'",
    "glab api projects/acme%2Fapp/merge_requests/12",
    'glab api "projects/acme%2Fapp/merge_requests?state=opened" --paginate',
    "glab api projects/acme%2Fapp/merge_requests/12/merge",
    "glab api -X GET projects/acme%2Fapp/merge_requests/12/merge",
    "glab api graphql -f query='query { currentUser { username } }'",
    "pairgate merge-check --mr 12 --mr-project acme/app",
    "glab mr merge --help",
    "glab --version",
    "which glab",
    "command -v glab",
    "${VENV}/bin/python -m pytest tests/test_hook.py",
    "bash scripts/test -k 'hook'",
    "find . -name '*.py' -exec grep -l merge {} +",
    "cat <<'EOF' > notes.md\nThe merge went fine.\nEOF",
    'glab mr note 12 -R acme/app -m "$(cat note.md)"',
    "git commit -F message.txt",
    "pairgate handoff 3 --to acme-review --role review --sha abc --reason-file reason.md",
]


def attributed(reading: CommandReading) -> set[tuple[str | None, int | None]]:
    return {(m.project, m.iid) for m in reading.merges if not m.problem}


@pytest.mark.parametrize(("command", "expected"), ATTRIBUTED, ids=[c for c, _ in ATTRIBUTED])
def test_a_disguised_merge_is_found_with_its_project_and_mr(
    command: str, expected: set[tuple[str, int]]
) -> None:
    reading = read_command(command)
    assert reading.problems() == []
    assert attributed(reading) == expected
    assert could_name_glab_merge(command)


@pytest.mark.parametrize(("command", "why"), BLOCKED, ids=[c for c, _ in BLOCKED])
def test_a_merge_the_reader_cannot_attribute_is_blocked_saying_why(command: str, why: str) -> None:
    problems = read_command(command).problems()
    assert problems, "the reading must block this command"
    assert any(why in p for p in problems), problems
    assert could_name_glab_merge(command)


@pytest.mark.parametrize("command", HARMLESS)
def test_a_harmless_command_merges_nothing(command: str) -> None:
    reading = read_command(command)
    assert reading == CommandReading()


def test_the_outside_project_is_read_like_any_other_and_left_to_the_gate() -> None:
    # Scope is the gate's decision (the group's project listing), not the reader's.
    assert attributed(read_command("glab mr merge 3 -R outside/app")) == {("outside/app", 3)}


@pytest.mark.parametrize(
    "command",
    ["ls -la", "git status", "cd src && make test", "pytest -q tests/x.py", "cat a.txt | sort"],
)
def test_the_fast_test_lets_through_only_what_cannot_spell_a_glab_merge(command: str) -> None:
    assert not could_name_glab_merge(command)


@pytest.mark.parametrize(
    "command",
    [
        "GLAB version",
        "x MERGE",
        "accept",
        "a$b",
        "a`b`",
        "a\\b",
        "'a'",
        '"a"',
        "a*",
        "a?",
        "a[b]",
        "a{b}",
    ],
)
def test_the_fast_test_sends_anything_that_could_to_the_reader(command: str) -> None:
    assert could_name_glab_merge(command)


def test_nesting_has_a_limit_and_blocks_beyond_it() -> None:
    command = "eval " * 12 + "glab mr merge 12 -R acme/app"
    assert any("nested too deep" in p for p in read_command(command).problems())


def test_every_merge_of_one_command_is_reported_once() -> None:
    reading = read_command("glab mr merge 12 -R acme/app; glab mr merge 12 -R acme/app")
    assert len(reading.merges) == 1
