
use builtin;
use str;

set edit:completion:arg-completer[dlqctl] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'dlqctl'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'dlqctl'= {
            cand --output 'Output format [default: table at a terminal, json otherwise]'
            cand --config 'Config file [default: ./dlqctl.toml, then the user config dir]'
            cand --color 'When to use colour'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'More diagnostics on stderr (-v, -vv)'
            cand --verbose 'More diagnostics on stderr (-v, -vv)'
            cand --no-progress 'Never draw progress bars'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand inspect 'Show what is in a dead-letter queue and how it is configured'
            cand peek 'Show messages without removing them'
            cand tail 'Follow messages as they arrive, without consuming them'
            cand classify 'Group messages by failure reason: transient, permanent (poison) or unclassified'
            cand redrive 'Move messages back to their source queue, keeping their stable ids'
            cand replay 'Send copies of messages to a target; nothing is removed from the source'
            cand export 'Write messages as JSON Lines, losslessly, without removing them'
            cand verify 'Check queue configuration for CI'
            cand completions 'Print a shell completion script'
            cand generate-artifacts 'Write (or check) the generated files'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'dlqctl;inspect'= {
            cand --output 'Output format [default: table at a terminal, json otherwise]'
            cand --config 'Config file [default: ./dlqctl.toml, then the user config dir]'
            cand --color 'When to use colour'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'More diagnostics on stderr (-v, -vv)'
            cand --verbose 'More diagnostics on stderr (-v, -vv)'
            cand --no-progress 'Never draw progress bars'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'dlqctl;peek'= {
            cand -n 'How many messages to show'
            cand --count 'How many messages to show'
            cand --class 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)'
            cand --match 'Only messages whose body matches REGEX'
            cand --error 'Only messages whose error (class and message) matches REGEX'
            cand --attr 'Only messages with attribute/header NAME matching REGEX (repeatable)'
            cand --older-than 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)'
            cand --newer-than 'Only messages first enqueued more recently than DURATION'
            cand --id 'Only these stable or native ids (repeatable)'
            cand --ids-from 'Only the ids listed in FILE, one per line (- for stdin)'
            cand --rules 'Extra classification rules (TOML), ahead of the config''s and the built-in ones'
            cand --output 'Output format [default: table at a terminal, json otherwise]'
            cand --config 'Config file [default: ./dlqctl.toml, then the user config dir]'
            cand --color 'When to use colour'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'More diagnostics on stderr (-v, -vv)'
            cand --verbose 'More diagnostics on stderr (-v, -vv)'
            cand --no-progress 'Never draw progress bars'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'dlqctl;tail'= {
            cand --max 'Stop after N messages'
            cand --idle-timeout 'Stop when nothing arrives for DURATION'
            cand --poll-interval 'How often to look for new messages'
            cand --class 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)'
            cand --match 'Only messages whose body matches REGEX'
            cand --error 'Only messages whose error (class and message) matches REGEX'
            cand --attr 'Only messages with attribute/header NAME matching REGEX (repeatable)'
            cand --older-than 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)'
            cand --newer-than 'Only messages first enqueued more recently than DURATION'
            cand --id 'Only these stable or native ids (repeatable)'
            cand --ids-from 'Only the ids listed in FILE, one per line (- for stdin)'
            cand --rules 'Extra classification rules (TOML), ahead of the config''s and the built-in ones'
            cand --output 'Output format [default: table at a terminal, json otherwise]'
            cand --config 'Config file [default: ./dlqctl.toml, then the user config dir]'
            cand --color 'When to use colour'
            cand --from-start 'Start with the messages already there'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'More diagnostics on stderr (-v, -vv)'
            cand --verbose 'More diagnostics on stderr (-v, -vv)'
            cand --no-progress 'Never draw progress bars'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'dlqctl;classify'= {
            cand --dedupe 'Dedupe table: postgres://USER@HOST/DB[?table=processed_messages&id_column=message_id]'
            cand --max 'Look at no more than N messages'
            cand --class 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)'
            cand --match 'Only messages whose body matches REGEX'
            cand --error 'Only messages whose error (class and message) matches REGEX'
            cand --attr 'Only messages with attribute/header NAME matching REGEX (repeatable)'
            cand --older-than 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)'
            cand --newer-than 'Only messages first enqueued more recently than DURATION'
            cand --id 'Only these stable or native ids (repeatable)'
            cand --ids-from 'Only the ids listed in FILE, one per line (- for stdin)'
            cand --rules 'Extra classification rules (TOML), ahead of the config''s and the built-in ones'
            cand --output 'Output format [default: table at a terminal, json otherwise]'
            cand --config 'Config file [default: ./dlqctl.toml, then the user config dir]'
            cand --color 'When to use colour'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'More diagnostics on stderr (-v, -vv)'
            cand --verbose 'More diagnostics on stderr (-v, -vv)'
            cand --no-progress 'Never draw progress bars'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'dlqctl;redrive'= {
            cand --to 'Where to send the messages [default: the configured or discovered source]'
            cand --max 'Move at most N messages'
            cand --rate 'At most this many messages per second (50, 50/s, 3000/m)'
            cand --batch-size 'Messages per batch (one transaction on PostgreSQL)'
            cand --class 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)'
            cand --match 'Only messages whose body matches REGEX'
            cand --error 'Only messages whose error (class and message) matches REGEX'
            cand --attr 'Only messages with attribute/header NAME matching REGEX (repeatable)'
            cand --older-than 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)'
            cand --newer-than 'Only messages first enqueued more recently than DURATION'
            cand --id 'Only these stable or native ids (repeatable)'
            cand --ids-from 'Only the ids listed in FILE, one per line (- for stdin)'
            cand --rules 'Extra classification rules (TOML), ahead of the config''s and the built-in ones'
            cand --output 'Output format [default: table at a terminal, json otherwise]'
            cand --config 'Config file [default: ./dlqctl.toml, then the user config dir]'
            cand --color 'When to use colour'
            cand --dry-run 'Show what would be moved; change nothing'
            cand -y 'Do not ask for confirmation (required without a terminal)'
            cand --yes 'Do not ask for confirmation (required without a terminal)'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'More diagnostics on stderr (-v, -vv)'
            cand --verbose 'More diagnostics on stderr (-v, -vv)'
            cand --no-progress 'Never draw progress bars'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'dlqctl;replay'= {
            cand --to 'Where to send the copies'
            cand --max 'Copy at most N messages'
            cand --rate 'At most this many messages per second (50, 50/s, 3000/m)'
            cand --batch-size 'Messages per batch'
            cand --class 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)'
            cand --match 'Only messages whose body matches REGEX'
            cand --error 'Only messages whose error (class and message) matches REGEX'
            cand --attr 'Only messages with attribute/header NAME matching REGEX (repeatable)'
            cand --older-than 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)'
            cand --newer-than 'Only messages first enqueued more recently than DURATION'
            cand --id 'Only these stable or native ids (repeatable)'
            cand --ids-from 'Only the ids listed in FILE, one per line (- for stdin)'
            cand --rules 'Extra classification rules (TOML), ahead of the config''s and the built-in ones'
            cand --output 'Output format [default: table at a terminal, json otherwise]'
            cand --config 'Config file [default: ./dlqctl.toml, then the user config dir]'
            cand --color 'When to use colour'
            cand --dry-run 'Show what would be sent; change nothing'
            cand -y 'Do not ask for confirmation (required without a terminal)'
            cand --yes 'Do not ask for confirmation (required without a terminal)'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'More diagnostics on stderr (-v, -vv)'
            cand --verbose 'More diagnostics on stderr (-v, -vv)'
            cand --no-progress 'Never draw progress bars'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'dlqctl;export'= {
            cand -o 'Write to FILE instead of stdout (written as FILE.partial, renamed when complete)'
            cand --output-file 'Write to FILE instead of stdout (written as FILE.partial, renamed when complete)'
            cand --max 'Export at most N messages'
            cand --class 'Only this class: transient, permanent, unclassified, or a rule name (repeatable)'
            cand --match 'Only messages whose body matches REGEX'
            cand --error 'Only messages whose error (class and message) matches REGEX'
            cand --attr 'Only messages with attribute/header NAME matching REGEX (repeatable)'
            cand --older-than 'Only messages first enqueued longer ago than DURATION (e.g. 2h, 3d)'
            cand --newer-than 'Only messages first enqueued more recently than DURATION'
            cand --id 'Only these stable or native ids (repeatable)'
            cand --ids-from 'Only the ids listed in FILE, one per line (- for stdin)'
            cand --rules 'Extra classification rules (TOML), ahead of the config''s and the built-in ones'
            cand --output 'Output format [default: table at a terminal, json otherwise]'
            cand --config 'Config file [default: ./dlqctl.toml, then the user config dir]'
            cand --color 'When to use colour'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'More diagnostics on stderr (-v, -vv)'
            cand --verbose 'More diagnostics on stderr (-v, -vv)'
            cand --no-progress 'Never draw progress bars'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'dlqctl;verify'= {
            cand --output 'Output format [default: table at a terminal, json otherwise]'
            cand --config 'Config file [default: ./dlqctl.toml, then the user config dir]'
            cand --color 'When to use colour'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'More diagnostics on stderr (-v, -vv)'
            cand --verbose 'More diagnostics on stderr (-v, -vv)'
            cand --no-progress 'Never draw progress bars'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'dlqctl;completions'= {
            cand --output 'Output format [default: table at a terminal, json otherwise]'
            cand --config 'Config file [default: ./dlqctl.toml, then the user config dir]'
            cand --color 'When to use colour'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'More diagnostics on stderr (-v, -vv)'
            cand --verbose 'More diagnostics on stderr (-v, -vv)'
            cand --no-progress 'Never draw progress bars'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'dlqctl;generate-artifacts'= {
            cand --dir 'Repository root to write into'
            cand --output 'Output format [default: table at a terminal, json otherwise]'
            cand --config 'Config file [default: ./dlqctl.toml, then the user config dir]'
            cand --color 'When to use colour'
            cand --check 'Only compare; exit 1 listing the files that differ'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'More diagnostics on stderr (-v, -vv)'
            cand --verbose 'More diagnostics on stderr (-v, -vv)'
            cand --no-progress 'Never draw progress bars'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'dlqctl;help'= {
            cand inspect 'Show what is in a dead-letter queue and how it is configured'
            cand peek 'Show messages without removing them'
            cand tail 'Follow messages as they arrive, without consuming them'
            cand classify 'Group messages by failure reason: transient, permanent (poison) or unclassified'
            cand redrive 'Move messages back to their source queue, keeping their stable ids'
            cand replay 'Send copies of messages to a target; nothing is removed from the source'
            cand export 'Write messages as JSON Lines, losslessly, without removing them'
            cand verify 'Check queue configuration for CI'
            cand completions 'Print a shell completion script'
            cand generate-artifacts 'Write (or check) the generated files'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'dlqctl;help;inspect'= {
        }
        &'dlqctl;help;peek'= {
        }
        &'dlqctl;help;tail'= {
        }
        &'dlqctl;help;classify'= {
        }
        &'dlqctl;help;redrive'= {
        }
        &'dlqctl;help;replay'= {
        }
        &'dlqctl;help;export'= {
        }
        &'dlqctl;help;verify'= {
        }
        &'dlqctl;help;completions'= {
        }
        &'dlqctl;help;generate-artifacts'= {
        }
        &'dlqctl;help;help'= {
        }
    ]
    $completions[$command]
}
