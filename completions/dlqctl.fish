# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_dlqctl_global_optspecs
    string join \n output= config= q/quiet v/verbose no-progress reason= color= profile= region= endpoint-url= allow-onward-redrive dedup-id= visibility-timeout= parallel= h/help V/version
end

function __fish_dlqctl_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_dlqctl_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_dlqctl_using_subcommand
    set -l cmd (__fish_dlqctl_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c dlqctl -n "__fish_dlqctl_needs_command" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_needs_command" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_needs_command" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_needs_command" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_needs_command" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_needs_command" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_needs_command" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_needs_command" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_needs_command" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_needs_command" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_needs_command" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -s V -l version -d 'Print version'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "inspect" -d 'Show what is in a dead-letter queue and how it is configured'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "peek" -d 'Show messages without removing them'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "tail" -d 'Follow messages as they arrive, without consuming them'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "classify" -d 'Group messages by failure reason: transient, permanent (poison) or unclassified'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "redrive" -d 'Move messages back to their source queue, keeping their stable ids'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "replay" -d 'Send copies of messages to a target; nothing is removed from the source'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "purge" -d 'Remove messages from a dead-letter queue, archiving each one first'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "edit" -d 'Fix one message by hand and send it back, keeping its stable id'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "export" -d 'Write messages as JSON Lines, losslessly, without removing them'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "verify" -d 'Check queue configuration for CI'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "check" -d 'Check the state of queues now, for cron, alerting and CI'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "audit" -d 'List recent runs that changed something: who, where, what, why and how it ended'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "ui" -d 'Browse dead-letter queues in a terminal UI: queues, failure groups, messages; redrive a group'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "version" -d 'Print the version, commit, backends and build target (--output json for bug reports)'
complete -c dlqctl -n "__fish_dlqctl_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l scan-max -d 'Read at most N messages for the arrivals over time and the per-fingerprint counts (0: read none)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l scan -d 'Read them on SQS too, where each read counts as a receive'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand inspect" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -s n -l count -d 'How many messages to show' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l class -d 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l match -d 'Only messages whose body matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l error -d 'Only messages whose error (class and message) matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l attr -d 'Only messages with attribute/header NAME matching REGEX (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l older-than -d 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l newer-than -d 'Only messages first enqueued more recently than DURATION' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l id -d 'Only these stable or native ids (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l ids-from -d 'Only the ids listed in FILE, one per line (- for stdin)' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l fingerprint -d 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l where -d 'Only messages for which the jq expression JQ is true (it must give true or false), over the message\'s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. \'.json.amount_cents > 100000\'' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l rules -d 'Extra classification rules (TOML), ahead of the config\'s and the built-in ones' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l explain -d 'Per message: the rule that gave its class, the text it matched and the rules before it'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand peek" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l max -d 'Stop after N messages' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l idle-timeout -d 'Stop when nothing arrives for DURATION' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l poll-interval -d 'How often to look for new messages' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l class -d 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l match -d 'Only messages whose body matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l error -d 'Only messages whose error (class and message) matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l attr -d 'Only messages with attribute/header NAME matching REGEX (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l older-than -d 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l newer-than -d 'Only messages first enqueued more recently than DURATION' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l id -d 'Only these stable or native ids (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l ids-from -d 'Only the ids listed in FILE, one per line (- for stdin)' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l fingerprint -d 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l where -d 'Only messages for which the jq expression JQ is true (it must give true or false), over the message\'s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. \'.json.amount_cents > 100000\'' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l rules -d 'Extra classification rules (TOML), ahead of the config\'s and the built-in ones' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l from-start -d 'Start with the messages already there'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand tail" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l test -d 'Classify this error text instead of a queue\'s messages' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l dedupe -d 'Dedupe table: postgres://USER@HOST/DB[?table=processed_messages&id_column=message_id]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l by -d 'Group by KEY[,KEY…]: class, rule, fingerprint, source, key (Kafka key or ordering group), attr:NAME, hour, day (of the dead-letter time)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l max -d 'Look at no more than N messages' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l class -d 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l match -d 'Only messages whose body matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l error -d 'Only messages whose error (class and message) matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l attr -d 'Only messages with attribute/header NAME matching REGEX (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l older-than -d 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l newer-than -d 'Only messages first enqueued more recently than DURATION' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l id -d 'Only these stable or native ids (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l ids-from -d 'Only the ids listed in FILE, one per line (- for stdin)' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l fingerprint -d 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l where -d 'Only messages for which the jq expression JQ is true (it must give true or false), over the message\'s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. \'.json.amount_cents > 100000\'' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l rules -d 'Extra classification rules (TOML), ahead of the config\'s and the built-in ones' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l explain -d 'Per message (the first 10,000): the rule that matched, the text it matched and the rules before it'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand classify" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l to -d 'Where to send the messages [default: the configured or discovered source]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l max -d 'At most N messages' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l rate -d 'At most this many messages per second on average over the run (50, 50/s, 3000/m): each batch waits until the run is due to send it; without --batch-size a batch is one second\'s worth (at least 1 message)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l batch-size -d 'Messages per batch (one transaction on PostgreSQL) [default: 1000; with --rate, one second\'s worth, at least 1]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l transform -d 'Send each message\'s record mapped by the jq expression JQ (body as .json, attributes as .attrs, key, group); the stable id cannot change. With --dry-run: a diff of the first few' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l class -d 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l match -d 'Only messages whose body matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l error -d 'Only messages whose error (class and message) matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l attr -d 'Only messages with attribute/header NAME matching REGEX (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l older-than -d 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l newer-than -d 'Only messages first enqueued more recently than DURATION' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l id -d 'Only these stable or native ids (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l ids-from -d 'Only the ids listed in FILE, one per line (- for stdin)' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l fingerprint -d 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l where -d 'Only messages for which the jq expression JQ is true (it must give true or false), over the message\'s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. \'.json.amount_cents > 100000\'' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l rules -d 'Extra classification rules (TOML), ahead of the config\'s and the built-in ones' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l keep-header -d 'Copy only the headers/attributes whose name matches PATTERN (a glob: *, ?, […]; repeatable). The one holding the stable id is always copied' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l strip-header -d 'Do not copy the headers/attributes whose name matches PATTERN (a glob; repeatable; applied after --keep-header), e.g. \'kafka_dlt-*\'' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l max-redrives -d 'Leave messages that dlqctl has redriven or replayed N times already where they are (their dlqctl-redrive-count header/attribute) [default: max_redrives in dlqctl.toml]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l park -d 'With --max-redrives: move those messages to TARGET instead (a queue, table or topic)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l dry-run -d 'Show the plan and what would happen; change nothing'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -s y -l yes -d 'Do not ask for confirmation (required without a terminal)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l native -d 'SQS: use the service\'s own move task (StartMessageMoveTask); no filters, ≤500/s'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l cancel -d 'With --native: cancel the running move task'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l no-wait -d 'With --native: start the task and return instead of following its progress'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l exactly-once -d 'Kafka → Kafka on one cluster: copies and the redrive group\'s offsets in one transaction (consumers of the target need isolation.level=read_committed)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand redrive" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l to -d 'Where to send the copies' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l max -d 'At most N messages' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l rate -d 'At most this many messages per second on average over the run (50, 50/s, 3000/m): each batch waits until the run is due to send it; without --batch-size a batch is one second\'s worth (at least 1 message)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l batch-size -d 'Messages per batch (one transaction on PostgreSQL) [default: 1000; with --rate, one second\'s worth, at least 1]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l class -d 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l match -d 'Only messages whose body matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l error -d 'Only messages whose error (class and message) matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l attr -d 'Only messages with attribute/header NAME matching REGEX (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l older-than -d 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l newer-than -d 'Only messages first enqueued more recently than DURATION' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l id -d 'Only these stable or native ids (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l ids-from -d 'Only the ids listed in FILE, one per line (- for stdin)' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l fingerprint -d 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l where -d 'Only messages for which the jq expression JQ is true (it must give true or false), over the message\'s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. \'.json.amount_cents > 100000\'' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l rules -d 'Extra classification rules (TOML), ahead of the config\'s and the built-in ones' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l keep-header -d 'Copy only the headers/attributes whose name matches PATTERN (a glob: *, ?, […]; repeatable). The one holding the stable id is always copied' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l strip-header -d 'Do not copy the headers/attributes whose name matches PATTERN (a glob; repeatable; applied after --keep-header), e.g. \'kafka_dlt-*\'' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l transform -d 'Send each message\'s record mapped by the jq expression JQ (body as .json, attributes as .attrs, key, group); the stable id cannot change. With --dry-run: a diff of the first few' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l max-redrives -d 'Leave messages that dlqctl has redriven or replayed N times already where they are (their dlqctl-redrive-count header/attribute) [default: max_redrives in dlqctl.toml]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l park -d 'With --max-redrives: move those messages to TARGET instead (a queue, table or topic)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l dry-run -d 'Show the plan and what would happen; change nothing'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -s y -l yes -d 'Do not ask for confirmation (required without a terminal)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand replay" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l archive -d 'Copy each message here before removing it: FILE.jsonl, a table, a queue or a topic' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l max -d 'At most N messages' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l rate -d 'At most this many messages per second on average over the run (50, 50/s, 3000/m): each batch waits until the run is due to send it; without --batch-size a batch is one second\'s worth (at least 1 message)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l batch-size -d 'Messages per batch (one transaction on PostgreSQL) [default: 1000; with --rate, one second\'s worth, at least 1]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l class -d 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l match -d 'Only messages whose body matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l error -d 'Only messages whose error (class and message) matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l attr -d 'Only messages with attribute/header NAME matching REGEX (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l older-than -d 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l newer-than -d 'Only messages first enqueued more recently than DURATION' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l id -d 'Only these stable or native ids (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l ids-from -d 'Only the ids listed in FILE, one per line (- for stdin)' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l fingerprint -d 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l where -d 'Only messages for which the jq expression JQ is true (it must give true or false), over the message\'s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. \'.json.amount_cents > 100000\'' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l rules -d 'Extra classification rules (TOML), ahead of the config\'s and the built-in ones' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l keep-header -d 'Copy only the headers/attributes whose name matches PATTERN (a glob: *, ?, […]; repeatable). The one holding the stable id is always copied' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l strip-header -d 'Do not copy the headers/attributes whose name matches PATTERN (a glob; repeatable; applied after --keep-header), e.g. \'kafka_dlt-*\'' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l no-archive -d 'Remove the messages without keeping a copy anywhere'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l dry-run -d 'Show the plan and what would happen; change nothing'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -s y -l yes -d 'Do not ask for confirmation (required without a terminal)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand purge" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l id -d 'The message\'s stable or native id' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l to -d 'Where to send the edited copy [default: the configured or discovered source]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand edit" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -s o -l output-file -d 'Write to FILE instead of stdout (written as FILE.partial, renamed when complete)' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l max -d 'Export at most N messages' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l class -d 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l match -d 'Only messages whose body matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l error -d 'Only messages whose error (class and message) matches REGEX' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l attr -d 'Only messages with attribute/header NAME matching REGEX (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l older-than -d 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l newer-than -d 'Only messages first enqueued more recently than DURATION' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l id -d 'Only these stable or native ids (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l ids-from -d 'Only the ids listed in FILE, one per line (- for stdin)' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l fingerprint -d 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l where -d 'Only messages for which the jq expression JQ is true (it must give true or false), over the message\'s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. \'.json.amount_cents > 100000\'' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l rules -d 'Extra classification rules (TOML), ahead of the config\'s and the built-in ones' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l force -d 'Replace FILE if it exists (without it, an existing file is an error; a symbolic link is refused either way)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand export" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand verify" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l max-messages -d 'At most N messages' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l max-age -d 'No message first enqueued longer ago than DURATION (e.g. 6h, 2d)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l max-in-flight -d 'SQS: at most N messages in flight' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l max-class -d 'At most N messages of CLASS (transient, permanent, unclassified or a rule name), e.g. permanent=0 (repeatable)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l baseline -d 'A `classify --by fingerprint --output json` file: a fingerprint not in it fails' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l scan-max -d 'Read at most N messages for the class and baseline checks [default: all]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l rules -d 'Extra classification rules (TOML), ahead of the config\'s and the built-in ones' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l since -d 'Only runs started within DURATION (24h, 7d) or since TIME (RFC 3339)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -s n -l limit -d 'The newest N runs' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand audit" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l refresh -d 'Read the queues view again every SECS seconds' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l scan-max -d 'Read at most N messages per queue for the queues view\'s classes, oldest age and class limits (0: none)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l read-only -d 'Change nothing: the keys that would (R, P, X, e) say they are disabled; E still exports'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand ui" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -l output -d 'Output format [default: table at a terminal, json otherwise]' -r -f -a "table\t'Tables and text for people (the default at a terminal), fitted to its width (`COLUMNS` when set)'
wide\t'Tables with every column in full, whatever the width'
json\t'One JSON document (the default when stdout is not a terminal)'
jsonl\t'One JSON object per line (JSON Lines), for jq and scripts'
junit\t'JUnit XML (verify and check)'
prometheus\t'OpenMetrics text (inspect and check)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -l config -d 'Config file [default: ./dlqctl.toml, then the user config dir]' -r -F
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -l reason -d 'Why this run changes something: recorded in the audit trail (docs/audit.md)' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -l color -d 'When to use colour' -r -f -a "auto\t''
always\t''
never\t''"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -l profile -d 'AWS profile [env: AWS_PROFILE]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -l region -d 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -l endpoint-url -d 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -l dedup-id -d 'How copies sent to a FIFO queue get their MessageDeduplicationId' -r -f -a "per-run\t'A new id for each run, derived from the stable id: retries inside one run are still deduplicated by SQS, and no copy collides with the original send\'s 5-minute window'
keep\t'The message\'s own deduplication id if it has one, else its stable id (inside the 5-minute window SQS drops the copy)'
stable-id\t'Always the stable id (same caveat as keep)'"
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -l visibility-timeout -d 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -l parallel -d 'SQS requests in flight at once' -r
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -s q -l quiet -d 'Print only data and errors'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -s v -l verbose -d 'More diagnostics on stderr (-v, -vv)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -l no-progress -d 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -l allow-onward-redrive -d 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand version" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "inspect" -d 'Show what is in a dead-letter queue and how it is configured'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "peek" -d 'Show messages without removing them'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "tail" -d 'Follow messages as they arrive, without consuming them'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "classify" -d 'Group messages by failure reason: transient, permanent (poison) or unclassified'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "redrive" -d 'Move messages back to their source queue, keeping their stable ids'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "replay" -d 'Send copies of messages to a target; nothing is removed from the source'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "purge" -d 'Remove messages from a dead-letter queue, archiving each one first'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "edit" -d 'Fix one message by hand and send it back, keeping its stable id'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "export" -d 'Write messages as JSON Lines, losslessly, without removing them'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "verify" -d 'Check queue configuration for CI'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "check" -d 'Check the state of queues now, for cron, alerting and CI'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "audit" -d 'List recent runs that changed something: who, where, what, why and how it ended'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "ui" -d 'Browse dead-letter queues in a terminal UI: queues, failure groups, messages; redrive a group'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "completions" -d 'Print a shell completion script'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "version" -d 'Print the version, commit, backends and build target (--output json for bug reports)'
complete -c dlqctl -n "__fish_dlqctl_using_subcommand help; and not __fish_seen_subcommand_from inspect peek tail classify redrive replay purge edit export verify check audit ui completions version help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
