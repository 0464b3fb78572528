
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'dlqctl' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'dlqctl'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'dlqctl' {
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('inspect', 'inspect', [CompletionResultType]::ParameterValue, 'Show what is in a dead-letter queue and how it is configured')
            [CompletionResult]::new('peek', 'peek', [CompletionResultType]::ParameterValue, 'Show messages without removing them')
            [CompletionResult]::new('tail', 'tail', [CompletionResultType]::ParameterValue, 'Follow messages as they arrive, without consuming them')
            [CompletionResult]::new('classify', 'classify', [CompletionResultType]::ParameterValue, 'Group messages by failure reason: transient, permanent (poison) or unclassified')
            [CompletionResult]::new('redrive', 'redrive', [CompletionResultType]::ParameterValue, 'Move messages back to their source queue, keeping their stable ids')
            [CompletionResult]::new('replay', 'replay', [CompletionResultType]::ParameterValue, 'Send copies of messages to a target; nothing is removed from the source')
            [CompletionResult]::new('purge', 'purge', [CompletionResultType]::ParameterValue, 'Remove messages from a dead-letter queue, archiving each one first')
            [CompletionResult]::new('edit', 'edit', [CompletionResultType]::ParameterValue, 'Fix one message by hand and send it back, keeping its stable id')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Write messages as JSON Lines, losslessly, without removing them')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Check queue configuration for CI')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Check the state of queues now, for cron, alerting and CI')
            [CompletionResult]::new('audit', 'audit', [CompletionResultType]::ParameterValue, 'List recent runs that changed something: who, where, what, why and how it ended')
            [CompletionResult]::new('ui', 'ui', [CompletionResultType]::ParameterValue, 'Browse dead-letter queues in a terminal UI: queues, failure groups, messages; redrive a group')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('version', 'version', [CompletionResultType]::ParameterValue, 'Print the version, commit, backends and build target (--output json for bug reports)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'dlqctl;inspect' {
            [CompletionResult]::new('--scan-max', '--scan-max', [CompletionResultType]::ParameterName, 'Read at most N messages for the arrivals over time and the per-fingerprint counts (0: read none)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('--scan', '--scan', [CompletionResultType]::ParameterName, 'Read them on SQS too, where each read counts as a receive')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;peek' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'How many messages to show')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'How many messages to show')
            [CompletionResult]::new('--class', '--class', [CompletionResultType]::ParameterName, 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)')
            [CompletionResult]::new('--match', '--match', [CompletionResultType]::ParameterName, 'Only messages whose body matches REGEX')
            [CompletionResult]::new('--error', '--error', [CompletionResultType]::ParameterName, 'Only messages whose error (class and message) matches REGEX')
            [CompletionResult]::new('--attr', '--attr', [CompletionResultType]::ParameterName, 'Only messages with attribute/header NAME matching REGEX (repeatable)')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)')
            [CompletionResult]::new('--newer-than', '--newer-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued more recently than DURATION')
            [CompletionResult]::new('--id', '--id', [CompletionResultType]::ParameterName, 'Only these stable or native ids (repeatable)')
            [CompletionResult]::new('--ids-from', '--ids-from', [CompletionResultType]::ParameterName, 'Only the ids listed in FILE, one per line (- for stdin)')
            [CompletionResult]::new('--fingerprint', '--fingerprint', [CompletionResultType]::ParameterName, 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)')
            [CompletionResult]::new('--where', '--where', [CompletionResultType]::ParameterName, 'Only messages for which the jq expression JQ is true (it must give true or false), over the message''s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. ''.json.amount_cents > 100000''')
            [CompletionResult]::new('--rules', '--rules', [CompletionResultType]::ParameterName, 'Extra classification rules (TOML), ahead of the config''s and the built-in ones')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('--explain', '--explain', [CompletionResultType]::ParameterName, 'Per message: the rule that gave its class, the text it matched and the rules before it')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;tail' {
            [CompletionResult]::new('--max', '--max', [CompletionResultType]::ParameterName, 'Stop after N messages')
            [CompletionResult]::new('--idle-timeout', '--idle-timeout', [CompletionResultType]::ParameterName, 'Stop when nothing arrives for DURATION')
            [CompletionResult]::new('--poll-interval', '--poll-interval', [CompletionResultType]::ParameterName, 'How often to look for new messages')
            [CompletionResult]::new('--class', '--class', [CompletionResultType]::ParameterName, 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)')
            [CompletionResult]::new('--match', '--match', [CompletionResultType]::ParameterName, 'Only messages whose body matches REGEX')
            [CompletionResult]::new('--error', '--error', [CompletionResultType]::ParameterName, 'Only messages whose error (class and message) matches REGEX')
            [CompletionResult]::new('--attr', '--attr', [CompletionResultType]::ParameterName, 'Only messages with attribute/header NAME matching REGEX (repeatable)')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)')
            [CompletionResult]::new('--newer-than', '--newer-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued more recently than DURATION')
            [CompletionResult]::new('--id', '--id', [CompletionResultType]::ParameterName, 'Only these stable or native ids (repeatable)')
            [CompletionResult]::new('--ids-from', '--ids-from', [CompletionResultType]::ParameterName, 'Only the ids listed in FILE, one per line (- for stdin)')
            [CompletionResult]::new('--fingerprint', '--fingerprint', [CompletionResultType]::ParameterName, 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)')
            [CompletionResult]::new('--where', '--where', [CompletionResultType]::ParameterName, 'Only messages for which the jq expression JQ is true (it must give true or false), over the message''s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. ''.json.amount_cents > 100000''')
            [CompletionResult]::new('--rules', '--rules', [CompletionResultType]::ParameterName, 'Extra classification rules (TOML), ahead of the config''s and the built-in ones')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('--from-start', '--from-start', [CompletionResultType]::ParameterName, 'Start with the messages already there')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;classify' {
            [CompletionResult]::new('--test', '--test', [CompletionResultType]::ParameterName, 'Classify this error text instead of a queue''s messages')
            [CompletionResult]::new('--dedupe', '--dedupe', [CompletionResultType]::ParameterName, 'Dedupe table: postgres://USER@HOST/DB[?table=processed_messages&id_column=message_id]')
            [CompletionResult]::new('--by', '--by', [CompletionResultType]::ParameterName, 'Group by KEY[,KEY…]: class, rule, fingerprint, source, key (Kafka key or ordering group), attr:NAME, hour, day (of the dead-letter time)')
            [CompletionResult]::new('--max', '--max', [CompletionResultType]::ParameterName, 'Look at no more than N messages')
            [CompletionResult]::new('--class', '--class', [CompletionResultType]::ParameterName, 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)')
            [CompletionResult]::new('--match', '--match', [CompletionResultType]::ParameterName, 'Only messages whose body matches REGEX')
            [CompletionResult]::new('--error', '--error', [CompletionResultType]::ParameterName, 'Only messages whose error (class and message) matches REGEX')
            [CompletionResult]::new('--attr', '--attr', [CompletionResultType]::ParameterName, 'Only messages with attribute/header NAME matching REGEX (repeatable)')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)')
            [CompletionResult]::new('--newer-than', '--newer-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued more recently than DURATION')
            [CompletionResult]::new('--id', '--id', [CompletionResultType]::ParameterName, 'Only these stable or native ids (repeatable)')
            [CompletionResult]::new('--ids-from', '--ids-from', [CompletionResultType]::ParameterName, 'Only the ids listed in FILE, one per line (- for stdin)')
            [CompletionResult]::new('--fingerprint', '--fingerprint', [CompletionResultType]::ParameterName, 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)')
            [CompletionResult]::new('--where', '--where', [CompletionResultType]::ParameterName, 'Only messages for which the jq expression JQ is true (it must give true or false), over the message''s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. ''.json.amount_cents > 100000''')
            [CompletionResult]::new('--rules', '--rules', [CompletionResultType]::ParameterName, 'Extra classification rules (TOML), ahead of the config''s and the built-in ones')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('--explain', '--explain', [CompletionResultType]::ParameterName, 'Per message (the first 10,000): the rule that matched, the text it matched and the rules before it')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;redrive' {
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Where to send the messages [default: the configured or discovered source]')
            [CompletionResult]::new('--max', '--max', [CompletionResultType]::ParameterName, 'At most N messages')
            [CompletionResult]::new('--rate', '--rate', [CompletionResultType]::ParameterName, 'At most this many messages per second on average over the run (50, 50/s, 3000/m): each batch waits until the run is due to send it; without --batch-size a batch is one second''s worth (at least 1 message)')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Messages per batch (one transaction on PostgreSQL) [default: 1000; with --rate, one second''s worth, at least 1]')
            [CompletionResult]::new('--transform', '--transform', [CompletionResultType]::ParameterName, 'Send each message''s record mapped by the jq expression JQ (body as .json, attributes as .attrs, key, group); the stable id cannot change. With --dry-run: a diff of the first few')
            [CompletionResult]::new('--class', '--class', [CompletionResultType]::ParameterName, 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)')
            [CompletionResult]::new('--match', '--match', [CompletionResultType]::ParameterName, 'Only messages whose body matches REGEX')
            [CompletionResult]::new('--error', '--error', [CompletionResultType]::ParameterName, 'Only messages whose error (class and message) matches REGEX')
            [CompletionResult]::new('--attr', '--attr', [CompletionResultType]::ParameterName, 'Only messages with attribute/header NAME matching REGEX (repeatable)')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)')
            [CompletionResult]::new('--newer-than', '--newer-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued more recently than DURATION')
            [CompletionResult]::new('--id', '--id', [CompletionResultType]::ParameterName, 'Only these stable or native ids (repeatable)')
            [CompletionResult]::new('--ids-from', '--ids-from', [CompletionResultType]::ParameterName, 'Only the ids listed in FILE, one per line (- for stdin)')
            [CompletionResult]::new('--fingerprint', '--fingerprint', [CompletionResultType]::ParameterName, 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)')
            [CompletionResult]::new('--where', '--where', [CompletionResultType]::ParameterName, 'Only messages for which the jq expression JQ is true (it must give true or false), over the message''s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. ''.json.amount_cents > 100000''')
            [CompletionResult]::new('--rules', '--rules', [CompletionResultType]::ParameterName, 'Extra classification rules (TOML), ahead of the config''s and the built-in ones')
            [CompletionResult]::new('--keep-header', '--keep-header', [CompletionResultType]::ParameterName, 'Copy only the headers/attributes whose name matches PATTERN (a glob: *, ?, […]; repeatable). The one holding the stable id is always copied')
            [CompletionResult]::new('--strip-header', '--strip-header', [CompletionResultType]::ParameterName, 'Do not copy the headers/attributes whose name matches PATTERN (a glob; repeatable; applied after --keep-header), e.g. ''kafka_dlt-*''')
            [CompletionResult]::new('--max-redrives', '--max-redrives', [CompletionResultType]::ParameterName, 'Leave messages that dlqctl has redriven or replayed N times already where they are (their dlqctl-redrive-count header/attribute) [default: max_redrives in dlqctl.toml]')
            [CompletionResult]::new('--park', '--park', [CompletionResultType]::ParameterName, 'With --max-redrives: move those messages to TARGET instead (a queue, table or topic)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show the plan and what would happen; change nothing')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required without a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required without a terminal)')
            [CompletionResult]::new('--native', '--native', [CompletionResultType]::ParameterName, 'SQS: use the service''s own move task (StartMessageMoveTask); no filters, ≤500/s')
            [CompletionResult]::new('--cancel', '--cancel', [CompletionResultType]::ParameterName, 'With --native: cancel the running move task')
            [CompletionResult]::new('--no-wait', '--no-wait', [CompletionResultType]::ParameterName, 'With --native: start the task and return instead of following its progress')
            [CompletionResult]::new('--exactly-once', '--exactly-once', [CompletionResultType]::ParameterName, 'Kafka → Kafka on one cluster: copies and the redrive group''s offsets in one transaction (consumers of the target need isolation.level=read_committed)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;replay' {
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Where to send the copies')
            [CompletionResult]::new('--max', '--max', [CompletionResultType]::ParameterName, 'At most N messages')
            [CompletionResult]::new('--rate', '--rate', [CompletionResultType]::ParameterName, 'At most this many messages per second on average over the run (50, 50/s, 3000/m): each batch waits until the run is due to send it; without --batch-size a batch is one second''s worth (at least 1 message)')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Messages per batch (one transaction on PostgreSQL) [default: 1000; with --rate, one second''s worth, at least 1]')
            [CompletionResult]::new('--class', '--class', [CompletionResultType]::ParameterName, 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)')
            [CompletionResult]::new('--match', '--match', [CompletionResultType]::ParameterName, 'Only messages whose body matches REGEX')
            [CompletionResult]::new('--error', '--error', [CompletionResultType]::ParameterName, 'Only messages whose error (class and message) matches REGEX')
            [CompletionResult]::new('--attr', '--attr', [CompletionResultType]::ParameterName, 'Only messages with attribute/header NAME matching REGEX (repeatable)')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)')
            [CompletionResult]::new('--newer-than', '--newer-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued more recently than DURATION')
            [CompletionResult]::new('--id', '--id', [CompletionResultType]::ParameterName, 'Only these stable or native ids (repeatable)')
            [CompletionResult]::new('--ids-from', '--ids-from', [CompletionResultType]::ParameterName, 'Only the ids listed in FILE, one per line (- for stdin)')
            [CompletionResult]::new('--fingerprint', '--fingerprint', [CompletionResultType]::ParameterName, 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)')
            [CompletionResult]::new('--where', '--where', [CompletionResultType]::ParameterName, 'Only messages for which the jq expression JQ is true (it must give true or false), over the message''s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. ''.json.amount_cents > 100000''')
            [CompletionResult]::new('--rules', '--rules', [CompletionResultType]::ParameterName, 'Extra classification rules (TOML), ahead of the config''s and the built-in ones')
            [CompletionResult]::new('--keep-header', '--keep-header', [CompletionResultType]::ParameterName, 'Copy only the headers/attributes whose name matches PATTERN (a glob: *, ?, […]; repeatable). The one holding the stable id is always copied')
            [CompletionResult]::new('--strip-header', '--strip-header', [CompletionResultType]::ParameterName, 'Do not copy the headers/attributes whose name matches PATTERN (a glob; repeatable; applied after --keep-header), e.g. ''kafka_dlt-*''')
            [CompletionResult]::new('--transform', '--transform', [CompletionResultType]::ParameterName, 'Send each message''s record mapped by the jq expression JQ (body as .json, attributes as .attrs, key, group); the stable id cannot change. With --dry-run: a diff of the first few')
            [CompletionResult]::new('--max-redrives', '--max-redrives', [CompletionResultType]::ParameterName, 'Leave messages that dlqctl has redriven or replayed N times already where they are (their dlqctl-redrive-count header/attribute) [default: max_redrives in dlqctl.toml]')
            [CompletionResult]::new('--park', '--park', [CompletionResultType]::ParameterName, 'With --max-redrives: move those messages to TARGET instead (a queue, table or topic)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show the plan and what would happen; change nothing')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required without a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required without a terminal)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;purge' {
            [CompletionResult]::new('--archive', '--archive', [CompletionResultType]::ParameterName, 'Copy each message here before removing it: FILE.jsonl, a table, a queue or a topic')
            [CompletionResult]::new('--max', '--max', [CompletionResultType]::ParameterName, 'At most N messages')
            [CompletionResult]::new('--rate', '--rate', [CompletionResultType]::ParameterName, 'At most this many messages per second on average over the run (50, 50/s, 3000/m): each batch waits until the run is due to send it; without --batch-size a batch is one second''s worth (at least 1 message)')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Messages per batch (one transaction on PostgreSQL) [default: 1000; with --rate, one second''s worth, at least 1]')
            [CompletionResult]::new('--class', '--class', [CompletionResultType]::ParameterName, 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)')
            [CompletionResult]::new('--match', '--match', [CompletionResultType]::ParameterName, 'Only messages whose body matches REGEX')
            [CompletionResult]::new('--error', '--error', [CompletionResultType]::ParameterName, 'Only messages whose error (class and message) matches REGEX')
            [CompletionResult]::new('--attr', '--attr', [CompletionResultType]::ParameterName, 'Only messages with attribute/header NAME matching REGEX (repeatable)')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)')
            [CompletionResult]::new('--newer-than', '--newer-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued more recently than DURATION')
            [CompletionResult]::new('--id', '--id', [CompletionResultType]::ParameterName, 'Only these stable or native ids (repeatable)')
            [CompletionResult]::new('--ids-from', '--ids-from', [CompletionResultType]::ParameterName, 'Only the ids listed in FILE, one per line (- for stdin)')
            [CompletionResult]::new('--fingerprint', '--fingerprint', [CompletionResultType]::ParameterName, 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)')
            [CompletionResult]::new('--where', '--where', [CompletionResultType]::ParameterName, 'Only messages for which the jq expression JQ is true (it must give true or false), over the message''s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. ''.json.amount_cents > 100000''')
            [CompletionResult]::new('--rules', '--rules', [CompletionResultType]::ParameterName, 'Extra classification rules (TOML), ahead of the config''s and the built-in ones')
            [CompletionResult]::new('--keep-header', '--keep-header', [CompletionResultType]::ParameterName, 'Copy only the headers/attributes whose name matches PATTERN (a glob: *, ?, […]; repeatable). The one holding the stable id is always copied')
            [CompletionResult]::new('--strip-header', '--strip-header', [CompletionResultType]::ParameterName, 'Do not copy the headers/attributes whose name matches PATTERN (a glob; repeatable; applied after --keep-header), e.g. ''kafka_dlt-*''')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('--no-archive', '--no-archive', [CompletionResultType]::ParameterName, 'Remove the messages without keeping a copy anywhere')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Show the plan and what would happen; change nothing')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required without a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation (required without a terminal)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;edit' {
            [CompletionResult]::new('--id', '--id', [CompletionResultType]::ParameterName, 'The message''s stable or native id')
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'Where to send the edited copy [default: the configured or discovered source]')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;export' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write to FILE instead of stdout (written as FILE.partial, renamed when complete)')
            [CompletionResult]::new('--output-file', '--output-file', [CompletionResultType]::ParameterName, 'Write to FILE instead of stdout (written as FILE.partial, renamed when complete)')
            [CompletionResult]::new('--max', '--max', [CompletionResultType]::ParameterName, 'Export at most N messages')
            [CompletionResult]::new('--class', '--class', [CompletionResultType]::ParameterName, 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)')
            [CompletionResult]::new('--match', '--match', [CompletionResultType]::ParameterName, 'Only messages whose body matches REGEX')
            [CompletionResult]::new('--error', '--error', [CompletionResultType]::ParameterName, 'Only messages whose error (class and message) matches REGEX')
            [CompletionResult]::new('--attr', '--attr', [CompletionResultType]::ParameterName, 'Only messages with attribute/header NAME matching REGEX (repeatable)')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)')
            [CompletionResult]::new('--newer-than', '--newer-than', [CompletionResultType]::ParameterName, 'Only messages first enqueued more recently than DURATION')
            [CompletionResult]::new('--id', '--id', [CompletionResultType]::ParameterName, 'Only these stable or native ids (repeatable)')
            [CompletionResult]::new('--ids-from', '--ids-from', [CompletionResultType]::ParameterName, 'Only the ids listed in FILE, one per line (- for stdin)')
            [CompletionResult]::new('--fingerprint', '--fingerprint', [CompletionResultType]::ParameterName, 'Only messages with this error fingerprint (as `classify --by fingerprint` shows, or a unique prefix of 8 or more characters; comma-separated or repeated)')
            [CompletionResult]::new('--where', '--where', [CompletionResultType]::ParameterName, 'Only messages for which the jq expression JQ is true (it must give true or false), over the message''s record with .json (the body parsed), .attrs (name → value), .error_text, .class, .rule, .fingerprint (docs/triage.md), e.g. ''.json.amount_cents > 100000''')
            [CompletionResult]::new('--rules', '--rules', [CompletionResultType]::ParameterName, 'Extra classification rules (TOML), ahead of the config''s and the built-in ones')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Replace FILE if it exists (without it, an existing file is an error; a symbolic link is refused either way)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;verify' {
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;check' {
            [CompletionResult]::new('--max-messages', '--max-messages', [CompletionResultType]::ParameterName, 'At most N messages')
            [CompletionResult]::new('--max-age', '--max-age', [CompletionResultType]::ParameterName, 'No message first enqueued longer ago than DURATION (e.g. 6h, 2d)')
            [CompletionResult]::new('--max-in-flight', '--max-in-flight', [CompletionResultType]::ParameterName, 'SQS: at most N messages in flight')
            [CompletionResult]::new('--max-class', '--max-class', [CompletionResultType]::ParameterName, 'At most N messages of CLASS (transient, permanent, unclassified or a rule name), e.g. permanent=0 (repeatable)')
            [CompletionResult]::new('--baseline', '--baseline', [CompletionResultType]::ParameterName, 'A `classify --by fingerprint --output json` file: a fingerprint not in it fails')
            [CompletionResult]::new('--scan-max', '--scan-max', [CompletionResultType]::ParameterName, 'Read at most N messages for the class and baseline checks [default: all]')
            [CompletionResult]::new('--rules', '--rules', [CompletionResultType]::ParameterName, 'Extra classification rules (TOML), ahead of the config''s and the built-in ones')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;audit' {
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'Only runs started within DURATION (24h, 7d) or since TIME (RFC 3339)')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The newest N runs')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'The newest N runs')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;ui' {
            [CompletionResult]::new('--refresh', '--refresh', [CompletionResultType]::ParameterName, 'Read the queues view again every SECS seconds')
            [CompletionResult]::new('--scan-max', '--scan-max', [CompletionResultType]::ParameterName, 'Read at most N messages per queue for the queues view''s classes, oldest age and class limits (0: none)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('--read-only', '--read-only', [CompletionResultType]::ParameterName, 'Change nothing: the keys that would (R, P, X, e) say they are disabled; E still exports')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;completions' {
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;version' {
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format [default: table at a terminal, json otherwise]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Config file [default: ./dlqctl.toml, then the user config dir]')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why this run changes something: recorded in the audit trail (docs/audit.md)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to use colour')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'AWS profile [env: AWS_PROFILE]')
            [CompletionResult]::new('--region', '--region', [CompletionResultType]::ParameterName, 'AWS region, unless the queue URL or ARN names one [env: AWS_REGION]')
            [CompletionResult]::new('--endpoint-url', '--endpoint-url', [CompletionResultType]::ParameterName, 'SQS endpoint (an emulator, a VPC endpoint) [env: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL]')
            [CompletionResult]::new('--dedup-id', '--dedup-id', [CompletionResultType]::ParameterName, 'How copies sent to a FIFO queue get their MessageDeduplicationId')
            [CompletionResult]::new('--visibility-timeout', '--visibility-timeout', [CompletionResultType]::ParameterName, 'Seconds a message read or claimed stays hidden (extended by a heartbeat while held) [default: 300]')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'SQS requests in flight at once')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More diagnostics on stderr (-v, -vv)')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never show progress: no bar at a terminal, no progress lines on stderr without one (every 10 s; DLQCTL_PROGRESS_INTERVAL seconds)')
            [CompletionResult]::new('--allow-onward-redrive', '--allow-onward-redrive', [CompletionResultType]::ParameterName, 'Read a DLQ whose reads can push messages onward: an SQS queue with its own RedrivePolicy (each read counts as a receive), a RabbitMQ quorum queue with a delivery-limit (each message given back counts a delivery)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'dlqctl;help' {
            [CompletionResult]::new('inspect', 'inspect', [CompletionResultType]::ParameterValue, 'Show what is in a dead-letter queue and how it is configured')
            [CompletionResult]::new('peek', 'peek', [CompletionResultType]::ParameterValue, 'Show messages without removing them')
            [CompletionResult]::new('tail', 'tail', [CompletionResultType]::ParameterValue, 'Follow messages as they arrive, without consuming them')
            [CompletionResult]::new('classify', 'classify', [CompletionResultType]::ParameterValue, 'Group messages by failure reason: transient, permanent (poison) or unclassified')
            [CompletionResult]::new('redrive', 'redrive', [CompletionResultType]::ParameterValue, 'Move messages back to their source queue, keeping their stable ids')
            [CompletionResult]::new('replay', 'replay', [CompletionResultType]::ParameterValue, 'Send copies of messages to a target; nothing is removed from the source')
            [CompletionResult]::new('purge', 'purge', [CompletionResultType]::ParameterValue, 'Remove messages from a dead-letter queue, archiving each one first')
            [CompletionResult]::new('edit', 'edit', [CompletionResultType]::ParameterValue, 'Fix one message by hand and send it back, keeping its stable id')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Write messages as JSON Lines, losslessly, without removing them')
            [CompletionResult]::new('verify', 'verify', [CompletionResultType]::ParameterValue, 'Check queue configuration for CI')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Check the state of queues now, for cron, alerting and CI')
            [CompletionResult]::new('audit', 'audit', [CompletionResultType]::ParameterValue, 'List recent runs that changed something: who, where, what, why and how it ended')
            [CompletionResult]::new('ui', 'ui', [CompletionResultType]::ParameterValue, 'Browse dead-letter queues in a terminal UI: queues, failure groups, messages; redrive a group')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('version', 'version', [CompletionResultType]::ParameterValue, 'Print the version, commit, backends and build target (--output json for bug reports)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'dlqctl;help;inspect' {
            break
        }
        'dlqctl;help;peek' {
            break
        }
        'dlqctl;help;tail' {
            break
        }
        'dlqctl;help;classify' {
            break
        }
        'dlqctl;help;redrive' {
            break
        }
        'dlqctl;help;replay' {
            break
        }
        'dlqctl;help;purge' {
            break
        }
        'dlqctl;help;edit' {
            break
        }
        'dlqctl;help;export' {
            break
        }
        'dlqctl;help;verify' {
            break
        }
        'dlqctl;help;check' {
            break
        }
        'dlqctl;help;audit' {
            break
        }
        'dlqctl;help;ui' {
            break
        }
        'dlqctl;help;completions' {
            break
        }
        'dlqctl;help;version' {
            break
        }
        'dlqctl;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
