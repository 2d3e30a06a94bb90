#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# block-unapproved-merge.sh: pairgate's merge hook, a Claude Code PreToolUse hook, registered for
# the Bash, Monitor and PowerShell tools and every MCP tool (docs/agent-handoff.md, "The merge
# hook"), and run as `bash <this file>`.
#
# It reads the hook JSON on stdin and blocks (exit 2, the reason on stderr) any tool call that
# would merge a merge request the gate does not pass, or at a head the gate did not approve.
# Claude Code blocks a call only on exit 2 and lets it through on every other failure, so this
# script exits 0 only when it is sure and, past the fast path, turns every failure into exit 2.
#
# Fast path, bash alone: a Bash or Monitor command whose text cannot spell a glab merge is
# allowed at once. Everything else goes to `python3 ownership.py hook` beside this file. Bash
# reads a script as it runs it, so the notes on the fast path come after it.

input=
while IFS= read -r -N 65536 chunk; do input+=$chunk; done
input+=$chunk

trusted=
if ((${#input} <= 8192)) && [[ $input != *'\u'* ]]; then
  if [[ ($input == *'"tool_name":"Bash"'* || $input == *'"tool_name":"Monitor"'*) &&
    $input != *'"tool_name"'*'"tool_name"'* && $input != *'"command"'*'"command"'* &&
    $input == *'"command":"'*'"'* ]]; then
    command_json=${input%%'"command":"'*}
    command_json=${input:${#command_json}+11}
    command_json=${command_json%%'"'*}
    trusted=1
  else
    tool_key='"tool_name"[[:space:]]*:[[:space:]]*"(Bash|Monitor)"'
    command_key='"command"[[:space:]]*:[[:space:]]*"(([^"\\]|\\.)*)"'
    if [[ $input =~ $tool_key && ${input#*'"tool_name"'} != *'"tool_name"'* &&
      $input =~ $command_key ]]; then
      command_json=${BASH_REMATCH[1]}
      [[ ${input#*"${BASH_REMATCH[0]}"} =~ \"command\"[[:space:]]*: ]] || trusted=1
    fi
  fi
  if [[ -n $trusted ]]; then
    shopt -s nocasematch
    case $command_json in
      *glab* | *merge* | *accept* | *'$'* | *'`'* | *"'"* | *'*'* | *'?'* | *'['* | *'{'* | *"\\\\"* | *"\\\""* | *"\\") ;;
      *) exit 0 ;;
    esac
  fi
  shopt -u nocasematch
fi

# The fast path (docs/agent-handoff-reference.md, "The fast test").
# - A command that says neither glab, merge nor accept (in any case), and has none of the
#   characters through which bash builds a word the text does not spell ($ ` \ ' " * ? [ {),
#   cannot run a glab merge.
# - stdin is read in chunks: `read -d ''` would take the pipe one byte per system call. Every
#   chunk is kept, so a long command is never cut short.
# - It looks at tool_input.command still JSON-encoded, and trusts it only when the input's one
#   "tool_name" is Bash or Monitor (a tool that runs a shell command; an MCP tool's input may
#   hold a "command" too), it is the input's one "command" key, and the input carries no \u
#   escape (which could spell anything). A \\ or \" escape sends the command to Python like
#   the backslash or quote it decodes to.
# - Only input of at most 8 KiB: Python reads long input quickly, while bash's regex matcher is
#   quadratic in the length of the text, and a hook that outlives Claude Code's timeout lets
#   the command through.
# - Compact JSON, as Claude Code writes it, is read with glob patterns alone. In JSON text a
#   quote is JSON's own or escaped inside a string, so "tool_name" and "command" (quote, name,
#   quote) occur once each only when no string could be read as a second such key; the
#   command's string ends at the next quote (a backslash before it, \", sends it to Python, and
#   input cut short before any closing quote is not trusted). JSON spaced otherwise is read with
#   regular expressions, which cost bash several times more.
# - The EXIT guard below is set only past the fast path, which exits 0 or falls through.

# Past the fast path: any exit but 0 and 2 would let the command through, so make it a block.
guard() {
  trap 'status=$?; if ((status != 0 && status != 2)); then
    printf "pairgate: the merge hook failed (status %s), so it blocks this command\n" "$status" >&2
    exit 2; fi' EXIT
}
guard

# Slow path: the command could name a glab merge. Decide in Python, beside this file.
here=${BASH_SOURCE[0]%/*}
[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
config=$here/pairgate-config.json

deny() {
  printf 'pairgate: %s\n' "$*" >&2
  exit 2
}

# What to run when a file is missing: the configuration's hooks_install_command when it can be
# read without Python, else the same advice in words.
install_hint() {
  local key='"hooks_install_command"[[:space:]]*:[[:space:]]*"([^"\\]*)"'
  local text
  if [[ -f $config ]] && text=$(<"$config") && [[ $text =~ $key ]]; then
    printf 'reinstall them: %s' "${BASH_REMATCH[1]}"
  else
    printf 'reinstall the hooks with the deployment'\''s hooks install command (the hooks_install_command key of pairgate-config.json; for pairgate itself, pairgate deploy-hooks --target %s)' "$here"
  fi
}

if [[ ! -f $here/ownership.py ]]; then
  deny "the merge hook runs beside files that are missing from $here: ownership.py. Until they are there it cannot check a merge, so it blocks every command that could make one; $(install_hint)"
fi

# Only _hooklib.sh may set these; a variable of the same name in the environment is dropped.
unset hooklib_timeout hooklib_python
if [[ -f $here/_hooklib.sh ]]; then
  # shellcheck source=_hooklib.sh
  source "$here/_hooklib.sh" || deny "$here/_hooklib.sh failed to load, so the merge hook blocks"
  set +euo pipefail # whatever it set, this script's exits stay its own
  guard
  if declare -F hooklib_preflight >/dev/null; then
    preflight=$(hooklib_preflight 2>&1) || deny "the hooks' preflight failed, so the merge hook blocks: $preflight"
  fi
fi

# The interpreter: _hooklib.sh's hooklib_python when it names one (the Python pairgate is
# installed in, when that is not the first python3 on the session's PATH), else python3.
python=${hooklib_python:-python3}
if [[ -n ${hooklib_python:-} ]]; then
  [[ -x $hooklib_python && ! -d $hooklib_python ]] ||
    deny "hooklib_python in $here/_hooklib.sh names $hooklib_python, which is not an executable file, so the merge hook cannot check this command and blocks it; point it at the python3 pairgate is installed in"
else
  command -v python3 >/dev/null 2>&1 ||
    deny "python3 is not on PATH, so the merge hook cannot check this command and blocks it; install Python 3.11 or later with requests, jsonschema, pyyaml, tree-sitter and tree-sitter-bash, or name the interpreter that has them in $here/_hooklib.sh: hooklib_python=/path/to/python3"
fi

# Its own time limit (seconds), below the "timeout" the hook is registered with: a hook that
# Claude Code has to kill lets the command through. _hooklib.sh may lower it.
limit=${hooklib_timeout:-20}
runner=()
command -v timeout >/dev/null 2>&1 && runner=(timeout -k 2 "$limit")

# ownership.py is imported rather than run, so that its compiled form is cached (outside the
# hooks directory); -E and -P keep the session's PYTHONPATH and working directory out of sys.path.
# The cyclic collector is off: the process ends within seconds, reference counting frees what
# it drops, and the collector's passes over the reader's import cost each decision 3 ms.
cache=()
if [[ -n ${HOME:-} ]]; then
  cache=(-X "pycache_prefix=${XDG_CACHE_HOME:-$HOME/.cache}/pairgate/pycache")
else
  cache=(-B)
fi
run='import gc; gc.disable(); import sys; sys.path.insert(0, sys.argv[1]); import ownership; ownership.hook_process()'

status=0
PAIRGATE_CONFIG=$config "${runner[@]}" "$python" -E -P "${cache[@]}" -c "$run" "$here" <<<"$input" || status=$?
case $status in
  0) exit 0 ;;
  2) exit 2 ;;
  124 | 137) deny "the merge hook timed out after ${limit}s, so it blocks this command" ;;
  *) deny "the merge hook's check failed ($python exited $status), so it blocks this command" ;;
esac
