# shellcheck shell=bash
# _hooklib.sh: the preflight library the merge hook sources.
#
# A deployment supplies its own _hooklib.sh beside its hooks (its other hooks source it too);
# deploy-hooks never copies this one. This is the copy pairgate's own suite runs the hook beside,
# and the example of the one name the merge hook uses from it:
#
#   hooklib_preflight   optional; exit status 0 when this machine can run the hooks, else
#                       non-zero with the reason on stdout or stderr. The merge hook calls it
#                       before starting Python and blocks the command when it fails.
#   hooklib_timeout     optional; the merge hook's own time limit in seconds (default 20). Keep
#                       it below the "timeout" the hook is registered with in Claude Code.
#   hooklib_python      optional; the Python the merge hook runs (default: python3 on PATH).
#                       Set it when pairgate is installed in a virtual environment that is not
#                       first on the sessions' PATH, e.g. hooklib_python=/opt/pairgate/bin/python3
#                       (`pairgate deploy-hooks` prints this line for the Python it runs under).
#
# Sourced, not run: it defines functions and changes no shell option.

hooklib_preflight() {
  if ! command -v python3 >/dev/null 2>&1; then
    echo "python3 is not on PATH"
    return 1
  fi
}
