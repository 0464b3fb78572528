#!/usr/bin/env bash
# The GitHub Action's check step (action.yml), usable from any CI: run `dlqctl verify` or
# `dlqctl check` with --output junit into a report file, summarise it, and exit with dlqctl's
# exit code (0 every check passed, 1 a check failed, a queue unreachable, not found or denied
# included: the check `reachable`, in the report; 2 usage or config error, no report). dlqctl
# must be on PATH (action/install.sh puts it there).
#
# Environment:
#   DLQCTL_ACTION_COMMAND  verify (default) or check
#   DLQCTL_ACTION_ARGS     what follows the command: queue names and flags, split like a shell
#                          line ('quotes' and "quotes" group; no variables, no globs)
#   DLQCTL_ACTION_CONFIG   dlqctl.toml to use (default: dlqctl's own lookup, DLQCTL_CONFIG)
#   DLQCTL_ACTION_REPORT   the JUnit file to write (default: dlqctl-report.xml)
# On GitHub Actions it also writes the step outputs exit-code, report, tests and failures, a
# job summary, and one error annotation per failed check.
set -uo pipefail

PROG=dlqctl-action
command=${DLQCTL_ACTION_COMMAND:-verify}
report=${DLQCTL_ACTION_REPORT:-dlqctl-report.xml}

say_error() {
    if [[ ${GITHUB_ACTIONS:-} == true ]]; then
        printf '::error title=dlqctl %s::%s\n' "$command" "$1"
    else
        printf '%s: error: %s\n' "$PROG" "$1" >&2
    fi
}

# A URL's password, as dlqctl itself shows it: ***.
redact() { sed -E 's#(://[^:/@[:space:]]*:)[^@/[:space:]]*@#\1***@#g' <<<"$1"; }

output() {
    if [[ -n ${GITHUB_OUTPUT:-} ]]; then printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"; fi
}

case $command in
    verify | check) ;;
    *)
        say_error "command must be verify or check, not '$command'"
        output exit-code 2
        exit 2
        ;;
esac
if ! command -v dlqctl >/dev/null 2>&1; then
    say_error "dlqctl is not on PATH (install it first: action/install.sh, or version: none with your own)"
    output exit-code 2
    exit 2
fi

# Split the arguments as a shell would split quoted words, without evaluating anything.
args=()
if [[ -n ${DLQCTL_ACTION_ARGS:-} ]]; then
    split=$(mktemp)
    if ! xargs -r printf '%s\0' <<<"$DLQCTL_ACTION_ARGS" >"$split"; then
        rm -f "$split"
        say_error "cannot split args (an unmatched quote?): $(redact "$DLQCTL_ACTION_ARGS")"
        output exit-code 2
        exit 2
    fi
    while IFS= read -r -d '' a; do args+=("$a"); done <"$split"
    rm -f "$split"
fi
if [[ -n ${DLQCTL_ACTION_CONFIG:-} ]]; then
    args=(--config "$DLQCTL_ACTION_CONFIG" "${args[@]}")
fi

mkdir -p "$(dirname "$report")"
redact "+ dlqctl $command ${args[*]} --output junit > $report" >&2
dlqctl "$command" "${args[@]}" --output junit >"$report"
rc=$?

# The totals from <testsuites name="…" tests="N" failures="M" …>.
attr() { sed -n "s/.*<testsuites [^>]*$1=\"\\([0-9]*\\)\".*/\\1/p" "$report" | head -n 1; }
tests=$(attr tests)
failures=$(attr failures)
if [[ -z $tests ]]; then
    # exit 2 (or any code but 0 and 1): dlqctl said why on stderr, and wrote no report.
    rm -f "$report"
    report=
fi

# One line per failed check: "SUITE<TAB>CASE<TAB>MESSAGE", XML entities decoded.
failed_checks() {
    [[ -n $report ]] || return 0
    awk '
        function unxml(s) {
            gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s)
            gsub(/&apos;/, "\047", s); gsub(/&#10;/, " ", s); gsub(/&amp;/, "\\&", s)
            return s
        }
        function attr(line, name,   r) {
            if (match(line, name "=\"[^\"]*\"")) {
                r = substr(line, RSTART + length(name) + 2, RLENGTH - length(name) - 3)
                return unxml(r)
            }
            return ""
        }
        /<testcase / { name = attr($0, "name"); suite = attr($0, "classname") }
        /<failure/ { printf "%s\t%s\t%s\n", suite, name, attr($0, "message") }
    ' "$report"
}

case $rc in
    0) summary="dlqctl $command: all ${tests:-0} checks passed" ;;
    1) summary="dlqctl $command: ${failures:-?} of ${tests:-?} checks failed" ;;
    2) summary="dlqctl $command: usage or configuration error (exit 2, see the log)" ;;
    *) summary="dlqctl $command: exit $rc (see the log)" ;;
esac
echo "$summary" >&2

if [[ ${GITHUB_ACTIONS:-} == true ]]; then
    while IFS=$'\t' read -r suite name message; do
        printf '::error title=dlqctl %s: %s::%s\n' "$command" "$suite: ${name%%: *}" "$message"
    done < <(failed_checks)
    if ((rc >= 2)); then say_error "$summary"; fi
fi
if [[ -n ${GITHUB_STEP_SUMMARY:-} ]]; then
    {
        printf '### %s\n\n' "$summary"
        if ((rc == 1)); then
            printf '| queue | check | detail |\n|---|---|---|\n'
            failed_checks | awk -F'\t' '{ gsub(/\|/, "\\|"); printf "| %s | %s | %s |\n", $1, $2, $3 }'
            printf '\n'
        fi
        # shellcheck disable=SC2016 # Markdown backticks
        if [[ -n $report ]]; then printf 'JUnit report: `%s`\n' "$report"; fi
    } >>"$GITHUB_STEP_SUMMARY"
fi
output exit-code "$rc"
output report "$report"
output tests "${tests:-0}"
output failures "${failures:-0}"
exit "$rc"
