"""Run docs/triage.md's walk-through at a pseudo-terminal of 80 columns and write what the
terminal showed (scripts/triage-walkthrough runs it once per backend).

Usage: triage-capture.py DLQCTL WORKDIR OUT.md TITLE
  DLQCTL   the binary
  WORKDIR  a directory with the dlqctl.toml naming the queue `orders` (the commands run there)
  OUT.md   where the transcript goes (appended: a section per backend)

Each command runs in a pseudo-terminal of 80 x 50, as a person at a terminal runs it (progress
bars, the question before a redrive, answered "y"); a small terminal emulator keeps what the
screen shows once the command ends (a spinner that was cleared leaves nothing). Commands whose
stdout goes to a file run without a terminal, as a shell redirection would. Standard library
only.
"""

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios

COLS, ROWS = 80, 50


class Screen:
    """The lines a terminal of COLS columns shows after `text` was written to it."""

    def __init__(self):
        self.lines = [[]]
        self.row = 0
        self.col = 0

    def _put(self, ch):
        if self.col >= COLS:  # autowrap
            self.row += 1
            self.col = 0
        while len(self.lines) <= self.row:
            self.lines.append([])
        line = self.lines[self.row]
        while len(line) <= self.col:
            line.append(" ")
        line[self.col] = ch
        self.col += 1

    def feed(self, text):
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\x1b":
                m = re.match(r"\x1b\[([?0-9;]*)([A-Za-z])", text[i:])
                if not m:
                    m = re.match(r"\x1b.", text[i:])
                    i += len(m.group(0)) if m else 1
                    continue
                params, final = m.group(1), m.group(2)
                n = int(params) if params.isdigit() else None
                if final == "K":
                    while len(self.lines) <= self.row:
                        self.lines.append([])
                    line = self.lines[self.row]
                    if n == 2:
                        self.lines[self.row] = []
                    elif n == 1:
                        for c in range(min(self.col, len(line))):
                            line[c] = " "
                    else:
                        del line[self.col:]
                elif final == "A":
                    self.row = max(0, self.row - (n or 1))
                elif final == "B":
                    self.row += n or 1
                elif final == "C":
                    self.col += n or 1
                elif final == "D":
                    self.col = max(0, self.col - (n or 1))
                elif final == "G":
                    self.col = (n or 1) - 1
                elif final == "J":
                    del self.lines[self.row + 1:]
                    if n in (None, 0) and self.row < len(self.lines):
                        del self.lines[self.row][self.col:]
                i += len(m.group(0))
                continue
            if ch == "\r":
                self.col = 0
            elif ch == "\n":
                self.row += 1
                self.col = 0
            elif ch == "\b":
                self.col = max(0, self.col - 1)
            elif ch == "\t":
                self.col = (self.col // 8 + 1) * 8
            elif ch >= " ":
                self._put(ch)
            i += 1

    def text(self):
        out = ["".join(line).rstrip() for line in self.lines]
        while out and not out[-1]:
            out.pop()
        return "\n".join(out)


def at_terminal(argv, cwd, env, answers):
    """Run argv at a pseudo-terminal; answer each prompt in `answers` once it shows."""
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        os.chdir(cwd)
        os.execvpe(argv[0], argv, env)
    seen = b""
    answered = set()
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        for prompt, answer in answers.items():
            if prompt not in answered and prompt.encode() in seen:
                answered.add(prompt)
                os.write(fd, answer.encode())
    _, status = os.waitpid(pid, 0)
    screen = Screen()
    screen.feed(seen.decode("utf-8", "replace"))
    return os.waitstatus_to_exitcode(status), screen.text()


def main():
    dlqctl, workdir, out_path, title = sys.argv[1:5]
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    env["DLQCTL_CONFIG"] = os.path.join(workdir, "dlqctl.toml")

    def run(args, answers=None):
        code, shown = at_terminal([dlqctl] + args, workdir, env, answers or {})
        shell = " ".join(a if re.fullmatch(r"[\w./:=,@+-]+", a) else "'" + a + "'" for a in args)
        return f"$ dlqctl {shell}\n{shown}\n" + (f"[exit {code}]\n" if code else "")

    def data(args):
        r = subprocess.run([dlqctl] + args, cwd=workdir, env=env, capture_output=True, text=True, check=True)
        return json.loads(r.stdout)

    # The fingerprints the walk-through acts on, found the way a person finds them: by reading
    # `classify --by fingerprint`.
    groups = data(["classify", "orders", "--by", "fingerprint", "--output", "json"])["groups"]

    def fp(word):
        return next(g["key"]["fingerprint"] for g in groups if word in (g.get("template") or ""))

    reset, empty = fp("connection reset"), fp("no line items")
    parts = [f"\n## {title}\n", "```text"]
    parts.append(run(["inspect", "orders"]))
    parts.append(run(["classify", "orders", "--by", "fingerprint"]))
    parts.append(run(["classify", "orders", "--by", "fingerprint,attr:tenant", "--fingerprint", empty]))
    parts.append(run(["classify", "orders", "--by", "class,hour", "--fingerprint", reset]))
    parts.append(run(["peek", "orders", "--fingerprint", empty, "-n", "1"]))
    parts.append(run(["peek", "orders", "-n", "1", "--where", '.json.amount_cents > 240000 and .attrs.tenant == "acme"']))
    parts.append(run(["redrive", "orders", "--fingerprint", reset, "--dry-run"]))
    parts.append(run(["redrive", "orders", "--fingerprint", reset], {"Proceed?": "y"}))
    parts.append(run(["export", "orders", "--fingerprint", empty, "-o", "poison.jsonl", "--force"]))
    # `> orders-baseline.json`: stdout is a file, not the terminal.
    with open(os.path.join(workdir, "orders-baseline.json"), "w") as f:
        subprocess.run([dlqctl, "classify", "orders", "--by", "fingerprint", "--output", "json"],
                       cwd=workdir, env=env, stdout=f, check=True)
    parts.append("$ dlqctl classify orders --by fingerprint --output json > orders-baseline.json\n")
    parts.append(run(["check", "orders", "--baseline", "orders-baseline.json", "--max-class", "permanent=0",
                      "--max-age", "2d"]))
    parts.append(run(["audit"]))
    parts.append("```\n")
    with open(out_path, "a") as f:
        f.write("\n".join(parts))


if __name__ == "__main__":
    main()
